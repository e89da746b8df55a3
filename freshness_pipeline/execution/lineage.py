"""Column lineage of the six job assets, derived from their SQL without running it.

RELATED.md A's four operator rules, applied to the parsed SQL (sqlglot, Spark dialect)
rather than to Catalyst's plan, which would need a Spark session:
- Project: an output column depends on every input column its expression references
  (a CASE/IF condition included).
- Filter: WHERE, the anti join and the semi joins keep the schema; they add no edge.
- Join: columns are qualified first (sqlglot's `qualify`), so each column reference names
  the left or the right side it comes from; a join adds no edge of its own.
- Aggregate: a grouping column maps to its input column; an aggregate column depends on
  every input column inside its aggregate expression (`count(*)` names none).

The local maps compose from sources to sinks: CTEs and subqueries inside a section, then
the sections of a job (`partial`, then `merge`, which reads `partial`), then the views the
runner registers (execution/runner.py), which name real tables:
- `delta_<input>`: the input table's rows t_done < arrival_ts <= u (a filter);
- a dimension (`company_master`): the table itself;
- `group_rows`: the current rows of the first input for the touched groups (regroup and
  window jobs; the `touched` section only chooses groups, so it adds no edge);
- `existing`: the target's own current rows. They are the table's earlier state, not an
  upstream asset, so their edges (a column onto itself) are left out.

Each edge carries how the input reaches the output along its paths (OpenLineage's
transformation types): `identity` (the value unchanged), `transform` (a row-wise
expression), `aggregate` (inside an aggregate function) or `condition` (only in a CASE/IF
condition, so it selects the value without being part of it). Beside the edges, each
asset lists the input columns that choose its rows (`join` and `filter` predicates,
`group_by` keys, and the runner's own arrival filter and group lookup): OpenLineage's
dataset-level INDIRECT lineage, which the four rules deliberately leave out of the edges.
Output column types come from sqlglot's type inference over the input tables' schemas, in
Spark's spelling.

The model lives in `lineage_model.py`, the tracing (sqlglot) in `lineage_sql.py`; this
module reads the tracing's committed result (`jobs_sql/lineage.json`) while that is
current and renders it. The Dagster metadata built from it is
`orchestration/lineage_metadata.py`'s.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

from freshness_pipeline.catalog.jobs import JOBS, PIPELINE_ORDER, JobSpec
from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.execution.lineage_model import (
    AssetLineage,
    Edge,
    LineageError,
)
from freshness_pipeline.execution.sql import sql_path

# OpenLineage column-lineage facet (1-2-0): transformation type and subtype per kind.
# `masking` (optional there) is not given: the kinds do not say whether a function hides
# its input (OpenLineage counts count() and hashes as masking).
OPENLINEAGE_TRANSFORMATION: dict[str, tuple[str, str]] = {
    "identity": ("DIRECT", "IDENTITY"),
    "transform": ("DIRECT", "TRANSFORMATION"),
    "aggregate": ("DIRECT", "AGGREGATION"),
    "condition": ("INDIRECT", "CONDITIONAL"),
}
OPENLINEAGE_FACET_SCHEMA = (
    "https://openlineage.io/spec/facets/1-2-0/ColumnLineageDatasetFacet.json#/$defs/"
    "ColumnLineageDatasetFacet"
)
OPENLINEAGE_SCHEMA_FACET_SCHEMA = (
    "https://openlineage.io/spec/facets/1-1-1/SchemaDatasetFacet.json#/$defs/SchemaDatasetFacet"
)
OPENLINEAGE_PRODUCER = "urn:freshness_pipeline:lineage"  # _producer must be a URI
OPENLINEAGE_NAMESPACE = "freshness"  # the lakehouse: a dataset's name is its table

# The tables the jobs read that no job writes, in Spark's type spelling: the raw tables as
# ingestion creates them (ingestion/ingest.py raw_schema; a test checks they agree) and the
# company master (ingestion/master.py).
SOURCE_SCHEMAS: dict[str, dict[str, str]] = {
    "price_raw": {
        "event_id": "string",
        "symbol": "string",
        "side": "string",
        "price": "double",
        "size": "bigint",
        "event_ts": "timestamp",
        "arrival_ts": "timestamp",
        "symbol_prefix": "string",
    },
    "trade_raw": {
        "event_id": "string",
        "symbol": "string",
        "price": "double",
        "size": "bigint",
        "trade_id": "bigint",
        "event_ts": "timestamp",
        "arrival_ts": "timestamp",
        "symbol_prefix": "string",
    },
    "company_master": {
        "symbol": "string",
        "name": "string",
        "sector": "string",
        "industry": "string",
    },
}


# The derived lineage of all six jobs, committed beside the SQL, so that loading the
# definitions (every run process does) reads a small JSON file instead of importing sqlglot
# and tracing six files (~0.22 s on 2 cores, docs/BENCHMARKS.md). It is used only while its
# key matches what the derivation depends on; otherwise the lineage is derived afresh, and
# a test fails until the snapshot is regenerated: `python -m freshness_pipeline.execution.lineage`.
SNAPSHOT_PATH = PROJECT_ROOT / "jobs_sql" / "lineage.json"
_DERIVATION_MODULES = (
    *(Path(__file__).with_name(name) for name in ("lineage_sql.py", "lineage_model.py")),
    Path(__file__).with_name("merge_sql.py"),  # the merges are generated
)


def _sqlglot_version_file() -> Path | None:
    # find_spec locates the package without importing it (importing costs ~0.1 s).
    spec = importlib.util.find_spec("sqlglot")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "_version.py"


def derivation_key() -> str:
    """Everything the derived lineage depends on: the SQL files, the jobs' inputs and
    kinds, the source tables' schemas, the tracing code and sqlglot's version."""
    digest = hashlib.sha256()
    for name in PIPELINE_ORDER:
        spec = JOBS[name]
        digest.update(repr((name, spec.inputs, spec.dimensions, spec.kind)).encode())
        digest.update(sql_path(name).read_bytes())
    digest.update(json.dumps(SOURCE_SCHEMAS, sort_keys=True).encode())
    for module in _DERIVATION_MODULES:
        digest.update(module.read_bytes())
    version_file = _sqlglot_version_file()
    digest.update(version_file.read_bytes() if version_file and version_file.exists() else b"-")
    return digest.hexdigest()


def derive_pipeline_lineage() -> dict[str, AssetLineage]:
    """All six jobs' lineage traced from their SQL, in pipeline order, each job's output
    schema feeding the jobs after it."""
    try:
        from freshness_pipeline.execution.lineage_sql import derive_lineage
    except ImportError as exc:  # sqlglot is pinned in pyproject.toml; `make setup` installs it
        raise LineageError(f"cannot trace the SQL: {exc} (run `make setup`)") from exc

    schemas: dict[str, Mapping[str, str]] = dict(SOURCE_SCHEMAS)
    lineage: dict[str, AssetLineage] = {}
    for name in PIPELINE_ORDER:
        derived = derive_lineage(JOBS[name], schemas)
        schemas[name] = {c.name: c.type for c in derived.columns}
        lineage[name] = derived
    return lineage


def declared_lineage(
    jobs: Mapping[str, JobSpec], source_schemas: Mapping[str, Mapping[str, str]]
) -> dict[str, AssetLineage | LineageError]:
    """Every declared job's lineage traced from its SQL (a user's folder: FRESHNESS_JOBS),
    in dependency order over `source_schemas` (the tables no job writes, as their Hudi
    metadata gives them); a job that cannot be traced, or reads one that could not, gets
    the reason instead."""
    from freshness_pipeline.execution.lineage_sql import derive_lineage

    schemas: dict[str, Mapping[str, str]] = dict(source_schemas)
    lineage: dict[str, AssetLineage | LineageError] = {}
    for name, spec in jobs.items():
        unknown = [t for t in (*spec.inputs, *spec.dimensions) if t not in schemas]
        if unknown:
            lineage[name] = LineageError(f"no schema for {', '.join(unknown)}")
            continue
        try:
            derived = derive_lineage(spec, schemas)
        except LineageError as exc:
            lineage[name] = exc
            continue
        schemas[name] = {c.name: c.type for c in derived.columns}
        lineage[name] = derived
    return lineage


def snapshot_text(lineage: Mapping[str, AssetLineage], key: str) -> str:
    """JSON with one line per column and per edge, so a review diff shows what changed."""
    lines = ["{", f'"derivation_key": {json.dumps(key)},', '"assets": [']
    for n, lin in enumerate(lineage.values()):
        data = lin.to_dict()
        lines.append("{")
        for field in ("asset", "inputs", "sql_sha256"):
            lines.append(f"{json.dumps(field)}: {json.dumps(data[field])},")
        for field, end in (("columns", ","), ("edges", ","), ("indirect", "")):
            rows = [json.dumps(row) for row in data[field]]
            lines.append(f'"{field}": [')
            lines += [row + ("," if r < len(rows) - 1 else "") for r, row in enumerate(rows)]
            lines.append("]" + end)
        lines.append("}" + ("," if n < len(lineage) - 1 else ""))
    lines += ["]", "}"]
    return "\n".join(lines) + "\n"


def load_snapshot(key: str, path: Path = SNAPSHOT_PATH) -> dict[str, AssetLineage] | None:
    """The committed lineage if it was derived from exactly the current inputs."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("derivation_key") != key:
            return None
        lineage = {a["asset"]: AssetLineage.from_dict(a) for a in data["assets"]}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return lineage if list(lineage) == list(PIPELINE_ORDER) else None


@lru_cache(maxsize=1)
def pipeline_lineage() -> dict[str, AssetLineage]:
    """All six jobs' lineage: the snapshot when current, else derived. Once per process."""
    snapshot = load_snapshot(derivation_key())
    return snapshot if snapshot is not None else derive_pipeline_lineage()


def asset_lineage(asset: str) -> AssetLineage:
    lineage = pipeline_lineage()
    if asset not in lineage:
        raise LineageError(f"no job asset {asset!r}; the six are: {', '.join(lineage)}")
    return lineage[asset]


# --- renderings ---------------------------------------------------------------------------


def _sources_text(edges: Iterable[Edge]) -> str:
    parts = [f"`{e.source}` ({'/'.join(e.kinds)})" for e in edges]
    return ", ".join(parts) if parts else "none (no input column, e.g. `count(*)`)"


def to_markdown(lineage: AssetLineage, heading: bool = True) -> str:
    """A table per output column: its type and the input columns it is made from."""
    lines = []
    if heading:
        lines += [f"### {lineage.asset}", ""]
    lines += [
        f"Column lineage from `jobs_sql/{lineage.asset}.sql` (inputs: "
        f"{', '.join(lineage.inputs)}).",
        "",
        "| column | type | from (kind) |",
        "|---|---|---|",
    ]
    types = {c.name: c.type for c in lineage.columns}
    for column, edges in lineage.deps_by_column().items():
        lines.append(f"| `{column}` | {types[column]} | {_sources_text(edges)} |")
    if lineage.indirect:
        chosen = ", ".join(
            f"`{d.source}` ({'/'.join(s.replace('_', ' ') for s in d.subtypes)})"
            for d in lineage.indirect
        )
        lines += ["", f"Rows chosen by (every column, indirectly): {chosen}."]
    return "\n".join(lines)


def markdown_report(lineages: Iterable[AssetLineage]) -> str:
    return "\n\n".join(to_markdown(lin) for lin in lineages) + "\n"


def to_openlineage(lineage: AssetLineage) -> dict[str, object]:
    """The asset as an OpenLineage output dataset with its `schema` and `columnLineage`
    facets (column-lineage facet 1-2-0: fields -> inputFields with transformations)."""
    fields: dict[str, object] = {}
    for column, edges in lineage.deps_by_column().items():
        fields[column] = {
            "inputFields": [
                {
                    "namespace": OPENLINEAGE_NAMESPACE,
                    "name": e.source.table,
                    "field": e.source.column,
                    "transformations": [
                        {
                            "type": OPENLINEAGE_TRANSFORMATION[k][0],
                            "subtype": OPENLINEAGE_TRANSFORMATION[k][1],
                            "description": k,
                        }
                        for k in e.kinds
                    ],
                }
                for e in edges
            ]
        }
    return {
        "namespace": OPENLINEAGE_NAMESPACE,
        "name": lineage.asset,
        "facets": {
            "schema": {
                "_producer": OPENLINEAGE_PRODUCER,
                "_schemaURL": OPENLINEAGE_SCHEMA_FACET_SCHEMA,
                "fields": [{"name": c.name, "type": c.type} for c in lineage.columns],
            },
            "columnLineage": {
                "_producer": OPENLINEAGE_PRODUCER,
                "_schemaURL": OPENLINEAGE_FACET_SCHEMA,
                "fields": fields,
                # Inputs that affect the whole dataset (facet 1-2-0's `dataset`).
                "dataset": [
                    {
                        "namespace": OPENLINEAGE_NAMESPACE,
                        "name": d.source.table,
                        "field": d.source.column,
                        "transformations": [
                            {
                                "type": "INDIRECT",
                                "subtype": subtype.upper(),
                                "description": subtype,
                            }
                            for subtype in d.subtypes
                        ],
                    }
                    for d in lineage.indirect
                ],
            },
        },
    }


def json_report(lineages: Iterable[AssetLineage]) -> str:
    return json.dumps({"outputs": [to_openlineage(lin) for lin in lineages]}, indent=2) + "\n"


def dot_report(lineages: Iterable[AssetLineage]) -> str:
    """Graphviz: one cluster per table, one node per column, one arrow per edge."""
    lineages = list(lineages)
    columns: dict[str, list[str]] = {}
    for name, cols in SOURCE_SCHEMAS.items():
        columns[name] = list(cols)
    for lin in lineages:
        columns[lin.asset] = [c.name for c in lin.columns]
    used = {e.source.table for lin in lineages for e in lin.edges} | {lin.asset for lin in lineages}
    lines = ["digraph column_lineage {", "  rankdir=LR;", "  node [shape=box, fontsize=10];"]
    for table in (t for t in columns if t in used):
        lines.append(f'  subgraph "cluster_{table}" {{')
        lines.append(f'    label="{table}";')
        for column in columns[table]:
            lines.append(f'    "{table}.{column}" [label="{column}"];')
        lines.append("  }")
    for lin in lineages:
        for e in lin.edges:
            style = " [style=dashed]" if e.kinds == ("condition",) else ""
            lines.append(f'  "{e.source}" -> "{e.target}"{style};')
    lines.append("}")
    return "\n".join(lines) + "\n"


FORMATS = {"markdown": markdown_report, "json": json_report, "dot": dot_report}


def render(fmt: str, assets: Iterable[str] | None = None) -> str:
    if fmt not in FORMATS:
        raise LineageError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    lineage = pipeline_lineage()
    chosen = list(lineage) if assets is None else list(assets)
    return FORMATS[fmt]([asset_lineage(a) for a in chosen])


def main() -> int:
    """Writes the snapshot of the derived lineage (run after changing a job's SQL)."""
    SNAPSHOT_PATH.write_text(
        snapshot_text(derive_pipeline_lineage(), derivation_key()), encoding="utf-8"
    )
    print(f"wrote {SNAPSHOT_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
