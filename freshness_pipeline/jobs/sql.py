"""Reads `jobs_sql/<asset>.sql` and splits it into its named sections.

A section starts at a line `-- section: <name>`; sections are `partial` and `merge`, plus
`touched` for regroup and window jobs.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from freshness_pipeline.config.settings import PROJECT_ROOT

SQL_DIR = PROJECT_ROOT / "jobs_sql"
_SECTION = re.compile(r"^--\s*section:\s*(\w+)\s*$", re.MULTILINE)


def sql_path(job: str) -> Path:
    return SQL_DIR / f"{job}.sql"


@lru_cache(maxsize=32)
def sql_sections(job: str) -> dict[str, str]:
    path = sql_path(job)
    if not path.exists():
        raise FileNotFoundError(f"SQL for job {job!r} is missing: {path}")
    text = path.read_text(encoding="utf-8")
    marks = list(_SECTION.finditer(text))
    sections = {}
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = "\n".join(
            line
            for line in text[mark.end() : end].splitlines()
            if not line.strip().startswith("--")
        ).strip()
        sections[mark.group(1)] = body.rstrip(";")
    return sections
