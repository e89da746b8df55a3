"""The checkout's own folder, and paths as a report shows them."""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def shown_path(path: Path | str) -> str:
    """A path as a report shows it: relative to the checkout when inside it, else its last
    two parts, so nothing committed names the folders of the machine it ran on."""
    resolved = Path(path).resolve()
    if resolved.is_relative_to(PROJECT_ROOT):
        return resolved.relative_to(PROJECT_ROOT).as_posix() or "."
    return "<outside the checkout>/" + "/".join(resolved.parts[-2:])
