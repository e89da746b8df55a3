"""Landed files -> validated batches, with one stream's batch read ahead in a thread.

Validation is pure Python, while a Hudi commit is mostly the JVM's work (the Python
thread only waits on py4j). Reading and validating the next stream's files during the
current stream's commit overlaps the two on separate cores, instead of leaving one idle
in turn. The batch read ahead is only a head start: when its stream's turn comes it is
used only if it started from the same checkpoint and its files are still the first ones
pending, and the files landed since are read then. So a commit holds exactly the files
it would hold without read-ahead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Set
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from freshness_pipeline.ingestion.validate import ValidatedBatch, validate_lines
from freshness_pipeline.stream.landing import LandedFile, list_landed

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReadBatch:
    """The validated rows of `landed`: the first files after checkpoint `after_seq`."""

    after_seq: int
    landed: tuple[LandedFile, ...]
    batch: ValidatedBatch


def merge_batches(stream: str, parts: list[ValidatedBatch]) -> ValidatedBatch:
    """One batch with the rows and rejects of `parts`, in order."""
    if not parts:  # no file at all: an empty batch with the stream's columns
        return validate_lines(stream, "", 0, [], frozenset())
    if len(parts) == 1:
        return parts[0]
    merged = ValidatedBatch(stream, {name: [] for name in parts[0].rows})
    for part in parts:
        for name, values in part.rows.items():
            merged.rows[name].extend(values)
        merged.rejects.extend(part.rejects)
    return merged


class LandedBatchReader:
    def __init__(self, landing_dir: Path, symbols: Set[str], max_files: int) -> None:
        self.landing_dir = landing_dir
        self.symbols = symbols
        self.max_files = max_files
        self._pool: ThreadPoolExecutor | None = None
        self._ahead: dict[str, Future[ReadBatch]] = {}
        # How many files the last `read` of each stream took from its read-ahead batch:
        # the ingestion log and the tests tell a used head start from a discarded one.
        self.reused_files: dict[str, int] = {}

    def read(self, stream: str, after_seq: int) -> ReadBatch:
        """The first `max_files` landed files after `after_seq` and their validated rows."""
        landed = tuple(list_landed(self.landing_dir, stream, after_seq)[: self.max_files])
        ahead = self._take_ahead(stream, after_seq)
        parts = []
        if ahead is not None and ahead.landed == landed[: len(ahead.landed)]:
            parts.append(ahead.batch)
            self.reused_files[stream] = len(ahead.landed)
        else:
            self.reused_files[stream] = 0
        rest = landed[self.reused_files[stream] :]
        if rest:
            parts.append(self._validate(stream, rest))
        return ReadBatch(after_seq, landed, merge_batches(stream, parts))

    def read_ahead(self, stream: str, checkpoint_of: Callable[[], int]) -> None:
        """Starts reading `stream`'s pending files in the background; `checkpoint_of` is
        called there too, so the caller does not wait for the table's timeline."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-read-ahead")
        previous = self._ahead.pop(stream, None)
        if previous is not None:
            previous.cancel()

        def read_pending() -> ReadBatch:
            after_seq = checkpoint_of()
            landed = tuple(list_landed(self.landing_dir, stream, after_seq)[: self.max_files])
            return ReadBatch(after_seq, landed, self._validate(stream, landed))

        self._ahead[stream] = self._pool.submit(read_pending)

    def close(self) -> None:
        self._ahead.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def _take_ahead(self, stream: str, after_seq: int) -> ReadBatch | None:
        future = self._ahead.pop(stream, None)
        if future is None:
            return None
        try:
            ahead = future.result()
        except Exception:
            # A failed head start costs nothing but the time: the files are read again
            # now, and a real problem with them raises here, in the commit's own thread.
            log.warning("read-ahead of %s failed; reading again", stream, exc_info=True)
            return None
        if ahead.after_seq != after_seq:
            return None  # the checkpoint moved since: another batch, read again
        return ahead

    def _validate(self, stream: str, landed: tuple[LandedFile, ...]) -> ValidatedBatch:
        parts = []
        for item in landed:
            # Bytes, line by line: a line that is not UTF-8 is one reject, not a crash.
            with open(item.path, "rb") as handle:
                parts.append(
                    validate_lines(stream, f"{item.seq:012d}", item.landed_us, handle, self.symbols)
                )
        return merge_batches(stream, parts)
