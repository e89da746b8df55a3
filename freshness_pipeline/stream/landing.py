"""The landing area between the replayer and ingestion: numbered JSON-lines files.

A file is `<stream>/<seq:012d>-<landed_us>.jsonl`, written under a temporary name and
renamed into place, so a reader never sees half a file. Sequence numbers only grow; the
ingestion checkpoint (kept in the Hudi commit) is the last sequence number committed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

_NAME = re.compile(r"^(\d{12})-(\d+)\.jsonl$")


@dataclass(frozen=True, order=True)
class LandedFile:
    seq: int
    landed_us: int
    path: Path


def stream_dir(landing_dir: Path, stream: str) -> Path:
    return landing_dir / stream


def list_landed(landing_dir: Path, stream: str, after_seq: int = -1) -> list[LandedFile]:
    """Complete landed files of a stream with sequence number above `after_seq`, in order."""
    folder = stream_dir(landing_dir, stream)
    if not folder.is_dir():
        return []
    files = []
    for entry in os.scandir(folder):
        match = _NAME.match(entry.name)
        if match and int(match.group(1)) > after_seq:
            files.append(LandedFile(int(match.group(1)), int(match.group(2)), Path(entry.path)))
    return sorted(files)


_NEXT_SEQ = ".next_seq"


def next_seq(landing_dir: Path, stream: str) -> int:
    """The next free sequence number: after the newest landed file, and after every file
    ever landed (ingestion deletes files, so the writer also keeps a marker)."""
    marker = stream_dir(landing_dir, stream) / _NEXT_SEQ
    recorded = int(marker.read_text()) if marker.exists() else 0
    return max([recorded] + [f.seq + 1 for f in list_landed(landing_dir, stream)])


def write_landed(
    landing_dir: Path, stream: str, seq: int, landed_us: int, lines: list[str]
) -> Path:
    folder = stream_dir(landing_dir, stream)
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"{seq:012d}-{landed_us}.jsonl"
    tmp = folder / f".{final.name}.tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        out.write("\n".join(lines))
        out.write("\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, final)
    marker_tmp = folder / f"{_NEXT_SEQ}.tmp"
    marker_tmp.write_text(str(seq + 1))
    os.replace(marker_tmp, folder / _NEXT_SEQ)
    return final


def remove_ingested(landing_dir: Path, stream: str, upto_seq: int) -> int:
    """Delete landed files already committed to Hudi (sequence <= checkpoint)."""
    removed = 0
    for landed in list_landed(landing_dir, stream):
        if landed.seq > upto_seq:
            break
        landed.path.unlink(missing_ok=True)
        removed += 1
    return removed
