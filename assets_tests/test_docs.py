"""The README is an entry point: short, and every link in it and in docs/ leads somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]+)\)")
README_MAX_LINES = 200


def anchors(markdown: str) -> set[str]:
    """GitHub's anchors for a file's headings (and explicit `<a id>`s)."""
    found = set(re.findall(r'<a id="([^"]+)"', markdown))
    for heading in re.findall(r"^#+ (.+)$", markdown, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def broken_links(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    broken = []
    for target in LINK.findall(text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked.read_text()):
            broken.append(f"{target}: no such heading")
    return broken


DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "jobs_sql" / "README.md"]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_link_leads_somewhere(path: Path):
    assert broken_links(path) == []


def test_the_readme_is_an_entry_point():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MAX_LINES
    first_screen = "\n".join(readme.splitlines()[:20])
    assert "make demo" in first_screen and "make test" in first_screen
    assert "## Documentation" in readme


def test_a_broken_link_is_found(tmp_path: Path):
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# A heading\n")
    page.write_text("[ok](other.md#a-heading) [gone](missing.md) [bad](other.md#nowhere)\n")
    assert broken_links(page) == ["missing.md: no such file", "other.md#nowhere: no such heading"]
