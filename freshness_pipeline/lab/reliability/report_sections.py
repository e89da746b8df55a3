"""One generated section of a Markdown report, replaced in place: `make chaos` and the soak
each own their part of docs/RELIABILITY.md and leave the rest as it is."""

from __future__ import annotations

from pathlib import Path


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:begin (generated) -->", f"<!-- {name}:end -->"


def write_section(path: Path, name: str, text: str) -> None:
    """Puts `text` between the section's markers in `path`: replacing what was there, or
    appended (the file created) when the section is new."""
    begin, end = _markers(name)
    block = f"{begin}\n{text.rstrip()}\n{end}\n"
    old = path.read_text() if path.exists() else ""
    if begin in old and end in old:
        head, rest = old.split(begin, 1)
        tail = rest.split(end, 1)[1].lstrip("\n")
        new = head + block + ("\n" + tail if tail else "")
    else:
        new = old + ("\n" if old and not old.endswith("\n\n") else "") + block
    path.write_text(new)
