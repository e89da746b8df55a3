"""Long-running ingestion: landed files -> Hudi copy-on-write raw tables, exactly once.

Each cycle, per stream: read the landed files after the table's checkpoint, validate,
upsert the rejects (keyed by landing position, so a retry rewrites the same rows), then
insert the good rows in one Hudi commit whose extra metadata holds the new checkpoint,
the arrival range written and the watermark. The checkpoint lives in the same atomic
commit as the data: a crash before it leaves the files to be read again, a crash after it
leaves nothing to redo. Landed files at or below the checkpoint are deleted afterwards.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from freshness_pipeline.catalog.tables import MASTER_TABLE, REJECTS_TABLE, STREAM_TABLE, STREAMS
from freshness_pipeline.config.settings import Settings
from freshness_pipeline.hudi import step_cpu
from freshness_pipeline.hudi.commit_keys import (
    ARRIVAL_MAX_KEY,
    ARRIVAL_MIN_KEY,
    CHECKPOINT_BEFORE_KEY,
    CHECKPOINT_KEY,
    WATERMARK_KEY,
)
from freshness_pipeline.hudi.metadata import HudiTableMetadata, TableNotFound
from freshness_pipeline.hudi.write import (
    RAW_LAYOUTS,
    STALE_CHECKPOINT_MARKER,
    concurrent_writer_options,
    ingestion_archival_options,
    raw_layout,
    write_options,
)
from freshness_pipeline.ingestion.reader import LandedBatchReader
from freshness_pipeline.ingestion.validate import Reject, ValidatedBatch
from freshness_pipeline.stream.landing import list_landed, remove_ingested

log = logging.getLogger(__name__)
# After a cycle that found nothing landed, the next one comes this soon (at most the
# interval): see `pause_after`.
EMPTY_POLL_S = 1.0


def pause_after(committed: bool, commit_interval_s: float, elapsed_s: float) -> float:
    """How long the loop waits after a cycle that took `elapsed_s`. The interval paces
    commits; a cycle with nothing landed committed nothing, so the next looks again within
    a second: at the start (ingestion is ready before the stream's first file lands) and
    after a quiet spell, the first files are committed at once, not up to an interval
    later (the demo's first raw commit came 10 s after the stream started)."""
    pause = commit_interval_s if committed else min(EMPTY_POLL_S, commit_interval_s)
    return max(0.0, pause - elapsed_s)


@dataclass(frozen=True)
class IngestConfig:
    commit_interval_s: float = 10.0
    max_files_per_commit: int = 120
    keep_landed: bool = False  # keep ingested landing files (for debugging and replays)
    # Validate the next stream's files while this one commits (see ingestion/reader.py);
    # off only to measure what it gains (`bench-ingest`).
    read_ahead: bool = True
    # On a stop, keep committing until every file that landed before it is ingested (the
    # stack stops the replayer first), for at most this long; the rest waits for the next
    # start, which ingests it exactly once (the checkpoint is in the Hudi commit).
    drain_on_stop_s: float = 90.0
    # A commit's clean plans over the partitions it may clean, from a listing of them: at
    # a commit every few seconds most of a commit's Spark tasks. One commit in
    # `clean_every` of a stream cleans (and rolls back failed writes, LAZY); the rest
    # only insert. Old file versions wait a few commits longer, never shorter.
    clean_every: int = 1

    def __post_init__(self) -> None:
        if self.commit_interval_s <= 0:
            raise ValueError(f"commit_interval_s must be positive, got {self.commit_interval_s}")
        if self.max_files_per_commit < 1:
            raise ValueError("max_files_per_commit must be at least 1")
        if self.clean_every < 1:
            raise ValueError(f"clean_every must be at least 1, got {self.clean_every}")


@dataclass(frozen=True)
class CommitResult:
    stream: str
    files: int
    rows: int
    rejects: int
    checkpoint: int
    seconds: float
    # what the commit's Spark work cost in ingestion's JVM (hudi/step_cpu.py); {}: unknown
    cpu: Mapping[str, float] = field(default_factory=dict)


def raw_schema(stream: str):
    from pyspark.sql.types import (
        DoubleType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    fields = [StructField("event_id", StringType(), False), StructField("symbol", StringType())]
    if stream == "price":
        fields.append(StructField("side", StringType()))
    fields += [StructField("price", DoubleType()), StructField("size", LongType())]
    if stream == "trade":
        fields.append(StructField("trade_id", LongType()))
    fields += [
        StructField("event_ts", TimestampType()),
        StructField("arrival_ts", TimestampType()),
        StructField("symbol_prefix", StringType()),
    ]
    return StructType(fields)


def load_symbols(spark, settings: Settings) -> frozenset[str]:
    uri = settings.table_uri(MASTER_TABLE)
    try:
        HudiTableMetadata(settings.lakehouse.table(MASTER_TABLE))
    except TableNotFound as exc:
        raise TableNotFound(
            f"{exc}. Load the company master first: `freshness load-master`."
        ) from exc
    rows = spark.read.format("hudi").load(uri).select("symbol").collect()
    return frozenset(r.symbol for r in rows)


def raw_write_options(
    settings: Settings, table: str, metadata: Mapping[str, object], clean: bool = True
) -> dict[str, str]:
    """The options of one ingestion commit into raw `table`, carrying `metadata`; with
    `clean` False the commit leaves cleaning to a later one."""
    layout = raw_layout(table, settings.raw_packing)
    # A commit that only adds files of its own is a bulk insert (FRESHNESS_INGEST_WRITE):
    # Hudi's row writer writes them straight from Spark's rows, without the insert's
    # workload profile or its Avro records (10 Spark tasks a commit instead of 42), still
    # one file per partition a commit (hudi/write.py). Packing rewrites old files: only
    # an insert does that.
    bulk = settings.ingest_write == "bulk_insert" and not layout.pack_small_files
    options = {
        **write_options(layout, "bulk_insert" if bulk else "insert", metadata),
        # The raw table has a second writer, its clustering (clustering.py): both write
        # with optimistic concurrency under the table's lock. A failed insert is now
        # rolled back by a later clean once its heartbeat expires (LAZY), not by the
        # next insert; until then it is an inflight instant no reader sees. The commit
        # goes ahead only from the checkpoint its batch was read from (the metadata's
        # CHECKPOINT_BEFORE_KEY): a batch is committed once, whoever else read it.
        **concurrent_writer_options(
            settings.lakehouse.lock_path(table), guard=False, checkpoint_fence=True
        ),
        # A clustered table's timeline is archived by its clustering runs (hudi_write).
        **ingestion_archival_options(table in settings.clustering.tables),
    }
    # An all-rejects batch still commits (empty) so the checkpoint moves on.
    options["hoodie.allow.empty.commit"] = "true"
    if not clean:
        options["hoodie.clean.automatic"] = "false"
    return options


# Commits in a row refused by the checkpoint fence before a cycle gives up (each refusal
# means someone else moved the checkpoint on, so one retry normally suffices).
STALE_CHECKPOINT_RETRIES = 3


def _stale_reason(message: str) -> str:
    start = message.find(STALE_CHECKPOINT_MARKER)
    return message[start:].split("\n")[0][:300]


class Ingestor:
    def __init__(self, spark, settings: Settings, config: IngestConfig | None = None) -> None:
        self.spark = spark
        self.settings = settings
        self.config = config or IngestConfig()
        self.symbols = load_symbols(spark, settings)
        self.reader = LandedBatchReader(
            settings.landing_dir, self.symbols, self.config.max_files_per_commit
        )
        # commits per stream since this process started: its first commit cleans
        self._commits: dict[str, int] = {}

    def close(self) -> None:
        """Stops the read-ahead thread; the Spark session is the caller's."""
        self.reader.close()

    def checkpoint(self, stream: str) -> tuple[int, int | None]:
        """(last committed landing sequence, current watermark) of a stream's raw table."""
        try:
            meta = HudiTableMetadata(self.settings.lakehouse.table(STREAM_TABLE[stream]))
        except TableNotFound:
            return -1, None
        checkpoint = meta.latest_extra(CHECKPOINT_KEY)
        return (int(checkpoint) if checkpoint is not None else -1), meta.watermark_us()

    def ingest_once(self) -> list[CommitResult]:
        results = []
        for stream in STREAMS:
            result = self.ingest_stream(stream)
            if result is not None:
                results.append(result)
        return results

    def ingest_stream(self, stream: str) -> CommitResult | None:
        """Commits the stream's next batch (None: nothing to commit). A batch another
        ingestor committed first (one killed whose write a shared Spark server finished)
        is refused by the checkpoint fence; the next batch is read from the new checkpoint."""
        for _ in range(STALE_CHECKPOINT_RETRIES):
            try:
                return self._ingest_stream(stream)
            except Exception as exc:
                if STALE_CHECKPOINT_MARKER not in str(exc):
                    raise
                log.warning(
                    "%s: another ingestor committed this batch first; reading on from the "
                    "table's checkpoint (%s)",
                    stream,
                    _stale_reason(str(exc)),
                )
        return None

    def _ingest_stream(self, stream: str) -> CommitResult | None:
        if self.settings.is_external(STREAM_TABLE[stream]):
            return None  # a declared input someone else writes (inputs.py): never ours to write
        started = time.monotonic()
        checkpoint, watermark = self.checkpoint(stream)
        read = self.reader.read(stream, checkpoint)
        if not read.landed:
            if not self.config.keep_landed:
                remove_ingested(self.settings.landing_dir, stream, checkpoint)
            return None
        batch = read.batch
        new_checkpoint = read.landed[-1].seq
        if self.config.read_ahead:
            # The next stream's checkpoint cannot move during this commit: only this
            # thread commits, one stream at a time.
            following = STREAMS[(STREAMS.index(stream) + 1) % len(STREAMS)]
            self.reader.read_ahead(following, lambda: self.checkpoint(following)[0])
        if batch.rejects:
            self._write_rejects(batch.rejects)
        with step_cpu.tagged(self.spark) as tag:
            positions = {
                CHECKPOINT_KEY: new_checkpoint,
                CHECKPOINT_BEFORE_KEY: "" if checkpoint < 0 else checkpoint,
            }
            self._write_raw(stream, batch, positions, watermark)
        cpu = step_cpu.take(self.spark, tag)
        if not self.config.keep_landed:
            remove_ingested(self.settings.landing_dir, stream, new_checkpoint)
        result = CommitResult(
            stream,
            len(read.landed),
            batch.row_count,
            len(batch.rejects),
            new_checkpoint,
            time.monotonic() - started,
            cpu,
        )
        log.info(
            "ingested %s (%d files validated ahead): %s",
            result,
            self.reader.reused_files[stream],
            step_cpu.cpu_text(cpu),
        )
        return result

    def _write_raw(
        self,
        stream: str,
        batch: ValidatedBatch,
        positions: Mapping[str, object],
        watermark: int | None,
    ) -> None:
        """Inserts `batch` into the stream's raw table in one commit whose extra metadata
        holds `positions` (the source's position after the batch, under the source's
        checkpoint key, and before it, CHECKPOINT_BEFORE_KEY) and the arrivals."""
        import pandas as pd

        table = STREAM_TABLE[stream]
        frame = pd.DataFrame(batch.rows, columns=list(batch.rows))
        arrivals = frame["arrival_ts"]
        metadata: dict[str, object] = dict(positions)
        if len(frame):
            low, high = int(arrivals.min()), int(arrivals.max())
            metadata[ARRIVAL_MIN_KEY] = low
            metadata[ARRIVAL_MAX_KEY] = high
            metadata[WATERMARK_KEY] = max(high, watermark or high)
        elif watermark is not None:
            metadata[WATERMARK_KEY] = watermark
        for column in ("event_ts", "arrival_ts"):
            frame[column] = pd.to_datetime(frame[column], unit="us", utc=True)
        frame["size"] = frame["size"].astype("int64")
        if "trade_id" in frame:
            frame["trade_id"] = frame["trade_id"].astype("int64")
        df = self.spark.createDataFrame(frame, schema=raw_schema(stream))
        done = self._commits.get(stream, 0)
        clean = done % self.config.clean_every == 0
        options = raw_write_options(self.settings, table, metadata, clean=clean)
        df.write.format("hudi").options(**options).mode("append").save(
            self.settings.table_uri(table)
        )
        self._commits[stream] = done + 1

    def _write_rejects(self, rejects: list[Reject]) -> None:
        import pandas as pd

        frame = pd.DataFrame(
            {
                "reject_id": [r.reject_id for r in rejects],
                "stream": [r.stream for r in rejects],
                # A Kafka message has no landing position: null there, its offset below.
                "landing_file": [None if r.topic else r.landing_file for r in rejects],
                "line_no": pd.Series(
                    [None if r.topic else r.line_no for r in rejects], dtype=object
                ),
                "reason": [r.reason for r in rejects],
                "detail": [r.detail for r in rejects],
                "raw_line": [r.raw_line for r in rejects],
                "landed_ts": pd.to_datetime([r.landed_us for r in rejects], unit="us", utc=True),
                "kafka_topic": [r.topic for r in rejects],
                "kafka_partition": pd.Series([r.partition for r in rejects], dtype=object),
                "kafka_offset": pd.Series([r.offset for r in rejects], dtype=object),
            }
        )
        # The Kafka columns were added after the landing ones (null for a landed line):
        # adding nullable columns is a compatible Hudi schema change for an existing table.
        schema = (
            "reject_id string, stream string, landing_file string, line_no int, "
            "reason string, detail string, raw_line string, landed_ts timestamp, "
            "kafka_topic string, kafka_partition int, kafka_offset bigint"
        )
        df = self.spark.createDataFrame(frame, schema=schema)
        options = write_options(RAW_LAYOUTS[REJECTS_TABLE], "upsert")
        df.write.format("hudi").options(**options).mode("append").save(
            self.settings.table_uri(REJECTS_TABLE)
        )

    def run(self, should_stop: Callable[[], bool] = lambda: False) -> None:
        """Commits every `commit_interval_s` until `should_stop()`; a stop request lets the
        current commit finish, then ingests what had landed (up to `drain_on_stop_s`)."""
        try:
            self._run_until(should_stop)
            self.drain_landed(self.config.drain_on_stop_s)
        finally:
            self.close()

    def landed_files(self) -> int:
        """Landed files not yet committed, over both streams."""
        return sum(
            len(list_landed(self.settings.landing_dir, s, self.checkpoint(s)[0])) for s in STREAMS
        )

    def drain_landed(self, timeout_s: float) -> int:
        """Commits until no landed file is left or `timeout_s` passes; returns how many
        files are left (0: everything that landed is in the raw tables)."""
        deadline = time.monotonic() + timeout_s
        left = self.landed_files()
        while left and time.monotonic() < deadline:
            try:
                self.ingest_once()
            except Exception:
                log.exception("ingestion cycle failed while draining at stop")
                break
            left = self.landed_files()
        if left:
            log.warning(
                "stopping with %d landed file(s) not ingested; the next start "
                "ingests them exactly once",
                left,
            )
        else:
            log.info("stopped with every landed file ingested")
        return left

    def _run_until(self, should_stop: Callable[[], bool]) -> None:
        while not should_stop():
            started = time.monotonic()
            try:
                committed = bool(self.ingest_once())
            except Exception:
                # A failed commit stays an inflight instant no reader sees (a later
                # clean rolls it back); its files are read again next cycle.
                log.exception("ingestion cycle failed; retrying after the interval")
                committed = True  # a failure waits the whole interval
            remaining = pause_after(
                committed, self.config.commit_interval_s, time.monotonic() - started
            )
            wait_until(time.monotonic() + remaining, should_stop)


def wait_until(
    deadline: float, should_stop: Callable[[], bool], clock=time.monotonic, sleep=time.sleep
) -> None:
    """Sleeps in short steps until the monotonic `deadline` or a stop. The clock is read
    once per step: a deadline that passes between two readings ends the wait, never asks
    for a negative sleep (which once stopped ingestion mid-experiment)."""
    while not should_stop():
        left = deadline - clock()
        if left <= 0:
            return
        sleep(min(0.2, left))
