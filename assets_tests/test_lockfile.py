"""requirements.lock (written by `make lock`, installed by `make setup`) must agree with the
dependencies declared in pyproject.toml: a pyproject change without re-locking fails here.
Pure file parsing, no network."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
LOCK = ROOT / "requirements.lock"

# "name==version \" at the start of a line; hash lines and comments are indented or start with #.
_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(?P<version>[^\s;\\]+)")


def _direct_requirements() -> list[Requirement]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    specs = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    return [Requirement(spec) for spec in specs]


def _lock_entries() -> dict[str, tuple[Version, list[str]]]:
    """Canonical name -> (pinned version, its sha256 hashes)."""
    entries: dict[str, tuple[Version, list[str]]] = {}
    current: str | None = None
    for line in LOCK.read_text().splitlines():
        pin = _PIN.match(line)
        if pin:
            current = canonicalize_name(pin["name"])
            assert current not in entries, f"{current} is pinned twice in {LOCK.name}"
            entries[current] = (Version(pin["version"]), [])
        elif current is not None and line.strip().startswith("--hash="):
            entries[current][1].append(line.strip().removeprefix("--hash=").rstrip(" \\"))
        elif line and not line[0].isspace() and not line.startswith("#"):
            raise AssertionError(f"unexpected line in {LOCK.name}: {line!r}")
    return entries


DIRECT = _direct_requirements()


def test_lock_file_exists_and_pins_packages() -> None:
    assert LOCK.is_file(), "requirements.lock is missing: run `make lock`"
    assert len(_lock_entries()) >= len(DIRECT)


# The lock is compiled for one interpreter (3.11, linux): a requirement whose environment
# marker excludes it is rightly absent, so only the applicable ones are checked.
APPLICABLE = [r for r in DIRECT if r.marker is None or r.marker.evaluate({"extra": "dev"})]


@pytest.mark.parametrize("requirement", APPLICABLE, ids=lambda r: r.name)
def test_direct_dependency_is_locked_within_its_specifier(requirement: Requirement) -> None:
    entries = _lock_entries()
    name = canonicalize_name(requirement.name)
    assert name in entries, f"{requirement} is in pyproject.toml but not locked: run `make lock`"
    version = entries[name][0]
    assert requirement.specifier.contains(version, prereleases=True), (
        f"{LOCK.name} pins {name}=={version}, outside pyproject's {requirement}: run `make lock`"
    )


def test_every_pin_is_hashed() -> None:
    """`make setup` installs with --require-hashes, which needs a hash on every pin."""
    unhashed = [name for name, (_, hashes) in _lock_entries().items() if not hashes]
    assert not unhashed, f"pins without --hash in {LOCK.name}: {unhashed}"
    for name, (_, hashes) in _lock_entries().items():
        for value in hashes:
            assert re.fullmatch(r"sha256:[0-9a-f]{64}", value), f"{name}: bad hash {value!r}"


def test_project_itself_is_not_locked() -> None:
    """The project is installed afterwards with `pip install --no-deps -e .`."""
    project_name = tomllib.loads(PYPROJECT.read_text())["project"]["name"]
    assert canonicalize_name(project_name) not in _lock_entries()
