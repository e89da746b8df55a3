"""The package's layers: each folder owns one part, a lower layer never imports a higher one,
modules import each other without a cycle, and the scheduling method stays pure.

Every import counts, at module level, inside a function (a lazy import hides a dependency;
it does not remove it) or under `if TYPE_CHECKING:` (two modules that need each other's
types are one concept split in two, or a type in the wrong module).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = "freshness_pipeline"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE

# From the bottom up; a module may import its own layer and any layer below it.
LAYERS = (
    # Peers written without the project (its test parses their imports): below everything.
    "lab.peers",
    "scheduling",
    "hudi",
    "catalog",
    "config",
    "stream",
    "ingestion",
    "execution",
    "runtime",
    "orchestration",
    # The lab beside the product (experiment and simulators, benchmarks, reliability
    # campaigns): layered inside as the product is, and never imported by the product.
    "lab.experiment",
    "lab.bench",
    "lab.reliability",
    "",  # the entry points at the top: definitions, cli
)
LAB = "lab"
LAB_ENTRY = "freshness_pipeline.cli"  # the lab's commands are the CLI's
# Third-party packages the pure method never imports.
IMPURE = ("dagster", "dagster_pyspark", "dagster_postgres", "pyspark", "hudi", "pyarrow", "pandas")
MAX_TOP_LEVEL_MODULES = 12


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, known: set[str], root: Path = ROOT) -> tuple[set[str], set[str]]:
    """(the package's modules this file imports, the third-party top-level packages)."""
    name = module_name(path, root)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    ours: set[str] = set()
    theirs: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # `from pkg import module` names a module; `from module import name` does not.
            targets = [
                f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module
                for alias in node.names
            ]
        for target in targets:
            top = target.split(".")[0]
            if top != PACKAGE:
                theirs.add(top)
                continue
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target != PACKAGE:
                ours.add(target)
    return ours, theirs


def layer_of(module: str) -> str:
    """The layer a module sits in: its folder (`hudi`), or its folder and subfolder for a
    layered folder (`lab.bench`); "" for an entry point at the top."""
    parts = module.split(".")[1:]
    for depth in (2, 1):
        if len(parts) >= depth and ".".join(parts[:depth]) in LAYERS:
            return ".".join(parts[:depth])
    return ""


def lab_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import of the lab by the product (the lab's own entry point aside)."""
    return [
        f"{module} imports {target}"
        for module, targets in sorted(graph.items())
        if not layer_of(module).startswith(LAB) and module not in (LAB_ENTRY, f"{PACKAGE}.{LAB}")
        for target in sorted(targets)
        if layer_of(target).startswith(LAB)
    ]


def import_graph(root: Path = ROOT) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    known = set(files)
    ours: dict[str, set[str]] = {}
    theirs: dict[str, set[str]] = {}
    for module, path in files.items():
        ours[module], theirs[module] = imports_of(path, known, root)
    return ours, theirs


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in sorted(graph.items()):
        rank = LAYERS.index(layer_of(module))
        for target in sorted(targets):
            if LAYERS.index(layer_of(target)) > rank:
                found.append(f"{module} ({layer_of(module)}) imports {target}")
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


@pytest.fixture(scope="module")
def graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    return import_graph()


def test_every_module_sits_in_a_layer_or_is_an_entry_point(graph):
    ours, _ = graph
    top = sorted(m for m in ours if m.count(".") == 1 and layer_of(m) == "")
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top
    folders = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    tops = {layer.split(".")[0] for layer in LAYERS}
    assert folders <= tops, f"a package in no layer: {folders - tops}"
    lab = {p.name for p in (ROOT / LAB).iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    inside = {layer.split(".")[1] for layer in LAYERS if layer.startswith(f"{LAB}.")}
    assert lab <= inside, f"a lab package in no layer: {lab - inside}"


def test_every_layer_package_says_what_it_owns():
    for layer in (*LAYERS[:-1], LAB):
        init = ROOT.joinpath(*layer.split(".")) / "__init__.py"
        assert init.exists(), f"{layer}/ is not a package"
        assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), init


def test_no_layer_imports_a_higher_one(graph):
    ours, _ = graph
    assert upward_imports(ours) == []


def test_the_product_never_imports_the_lab(graph):
    ours, _ = graph
    assert lab_imports(ours) == []


def test_no_import_cycle(graph):
    ours, _ = graph
    assert cycles(ours) == []


def test_the_scheduling_method_is_pure(graph):
    _, theirs = graph
    impure = {
        module: sorted(set(packages) & set(IMPURE))
        for module, packages in theirs.items()
        if layer_of(module) == "scheduling" and set(packages) & set(IMPURE)
    }
    assert impure == {}


# The checks themselves, on a small package written here: each must be able to fail.


def _write(root: Path, files: dict[str, str]) -> Path:
    package = root / PACKAGE
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for folder in [package, *[p for p in package.rglob("*") if p.is_dir()]]:
        (folder / "__init__.py").touch()
    return package


def test_the_checks_find_an_upward_import_a_cycle_and_an_impure_method(tmp_path):
    package = _write(
        tmp_path,
        {
            "scheduling/planner.py": "import dagster\nfrom freshness_pipeline.hudi import meta\n",
            "hudi/meta.py": "from freshness_pipeline.hudi.write import x\n",
            "hudi/write.py": "def f():\n    from freshness_pipeline.hudi.meta import y\n",
            "hudi/location.py": "from freshness_pipeline.hudi.inputs import DeclaredInput\n",
            "hudi/inputs.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from freshness_pipeline.hudi.location import Location\n"
            ),
        },
    )
    ours, theirs = import_graph(package)
    assert upward_imports(ours) == [
        "freshness_pipeline.scheduling.planner (scheduling) imports freshness_pipeline.hudi.meta"
    ]
    # A lazy import and an import for types only both count.
    assert cycles(ours) == [
        ["freshness_pipeline.hudi.inputs", "freshness_pipeline.hudi.location"],
        ["freshness_pipeline.hudi.meta", "freshness_pipeline.hudi.write"],
    ]
    assert "dagster" in theirs["freshness_pipeline.scheduling.planner"]


def test_the_check_finds_the_product_importing_the_lab(tmp_path):
    package = _write(
        tmp_path,
        {
            "definitions.py": "from freshness_pipeline.lab.bench import tick\n",
            "cli.py": "from freshness_pipeline.lab.experiment import harness\n",
            "runtime/stack.py": (
                "def f():\n    from freshness_pipeline.lab.experiment import harness\n"
            ),
            "lab/bench/tick.py": "from freshness_pipeline.lab.experiment import harness\n",
            "lab/experiment/harness.py": "from freshness_pipeline.runtime import stack\n",
        },
    )
    ours, _ = import_graph(package)
    assert lab_imports(ours) == [
        "freshness_pipeline.definitions imports freshness_pipeline.lab.bench.tick",
        "freshness_pipeline.runtime.stack imports freshness_pipeline.lab.experiment.harness",
    ]
    assert layer_of("freshness_pipeline.lab.bench.tick") == "lab.bench"
    assert layer_of("freshness_pipeline.lab") == ""


# Settings are built once, by an entry point, and handed down: the CLI, the definitions a
# code server or run worker loads (the lab's commands get theirs from the CLI).
ENTRY_MODULES = ("freshness_pipeline.definitions", "freshness_pipeline.cli")


def settings_loads(root: Path = ROOT) -> list[str]:
    """Every `load_settings(...)` call outside config/ and the entry modules."""
    found = []
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        if layer_of(module) == "config" or module in ENTRY_MODULES:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name | ast.Attribute)
                and (getattr(node.func, "id", None) or getattr(node.func, "attr", None))
                == "load_settings"
            ):
                found.append(f"{module}:{node.lineno}")
    return found


def environment_writes(root: Path = ROOT) -> list[str]:
    """Every change a module makes to its own process's environment."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            target = None
            if isinstance(node, ast.Assign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                target = next((t for t in targets if "os.environ" in ast.unparse(t)), None)
            elif isinstance(node, ast.Call) and ast.unparse(node.func) in (
                "os.environ.pop",
                "os.environ.update",
                "os.environ.setdefault",
                "os.environ.clear",
                "os.putenv",
                "os.unsetenv",
            ):
                target = node
            if target is not None:
                found.append(f"{module_name(path, root)}:{node.lineno}")
    return found


def test_settings_are_loaded_only_at_entry_points():
    assert settings_loads() == []


def test_no_module_changes_its_own_environment_but_the_aws_sdk_knobs():
    # hudi/location.py sets two of the AWS SDK's own variables (never ours) before it
    # builds a pyarrow S3 client, and rustls's SSL_CERT_FILE for hudi-rs when the object
    # store's CA is private; nothing else writes this process's environment.
    writes = [w for w in environment_writes() if not w.startswith(f"{PACKAGE}.hudi.location:")]
    assert writes == []


def test_the_settings_checks_can_fail(tmp_path):
    package = _write(
        tmp_path,
        {
            "runtime/spark.py": (
                "import os\nfrom freshness_pipeline.config.settings import load_settings\n"
                "def session():\n    settings = load_settings()\n"
                "    os.environ['FRESHNESS_LAKEHOUSE'] = '/x'\n"
            ),
            "bench/tick.py": "def main():\n    load_settings()\n",
            "config/settings.py": "def load_settings():\n    pass\n",
        },
    )
    assert settings_loads(package) == [
        "freshness_pipeline.bench.tick:2",
        "freshness_pipeline.runtime.spark:4",
    ]
    assert environment_writes(package) == ["freshness_pipeline.runtime.spark:5"]


def module_level(tree: ast.Module) -> list[ast.stmt]:
    """The statements that run when the module is imported: its body, and the bodies of
    module-level `with`, `if` and `try` blocks (not functions' or classes')."""
    found: list[ast.stmt] = []
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        found.append(node)
        if isinstance(node, ast.With | ast.If | ast.Try):
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, field, []):
                    todo.extend(child.body if isinstance(child, ast.ExceptHandler) else [child])
    return found


def module_level_dagster_objects(root: Path = ROOT) -> list[str]:
    """Module-level names built by a Dagster call or a `build_*` function: definitions made
    at import time, from settings nobody passed."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        dagster_names = set()
        statements = module_level(tree)
        for node in statements:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dagster"):
                dagster_names |= {a.asname or a.name for a in node.names}
            elif isinstance(node, ast.Import):
                dagster_names |= {
                    a.asname or a.name for a in node.names if a.name.startswith("dagster")
                }
        for node in statements:
            value = getattr(node, "value", None)
            if not isinstance(node, ast.Assign | ast.AnnAssign) or not isinstance(value, ast.Call):
                continue
            callee = value.func
            while isinstance(callee, ast.Attribute):
                callee = callee.value
            name = ast.unparse(value.func)
            if (isinstance(callee, ast.Name) and callee.id in dagster_names) or name.startswith(
                "build_"
            ):
                found.append(f"{module_name(path, root)}:{node.lineno}")
    return found


PEER_LOCATION = Path("lab/peers/dagster_plain/definitions.py")  # a code location of its own


def test_only_the_definitions_dagster_loads_are_built_at_import():
    peer = ".".join(PEER_LOCATION.with_suffix("").parts)
    assert module_level_dagster_objects() == [
        f"{PACKAGE}.definitions:{_defs_line()}",
        f"{PACKAGE}.{peer}:{_defs_line(PEER_LOCATION)}",
    ]


def _defs_line(path: Path = Path("definitions.py")) -> int:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    return next(
        n.lineno
        for n in module_level(tree)
        if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "defs"
    )


def test_the_import_time_check_can_fail(tmp_path):
    package = _write(
        tmp_path,
        {
            "orchestration/sources.py": (
                "import dagster as dg\nfrom dagster import AssetKey\n"
                "RAW = build_raw_sources()\nKEY = AssetKey('x')\nJOB = dg.define_asset_job('j')\n"
                "NAME = str('fine')\n"
                "with open('x'):\n    from dagster import Output\n    HIDDEN = Output(1)\n"
                "def f():\n    INSIDE = AssetKey('y')\n"
            ),
        },
    )
    assert module_level_dagster_objects(package) == [
        "freshness_pipeline.orchestration.sources:3",
        "freshness_pipeline.orchestration.sources:4",
        "freshness_pipeline.orchestration.sources:5",
        "freshness_pipeline.orchestration.sources:9",
    ]
