"""Ingestion against real Hudi tables: quarantine, watermarks, and exactly-once across a
process killed in the middle of a commit."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from assets_tests.conftest import child_env
from freshness_pipeline.config.settings import Settings
from freshness_pipeline.hudi.commit_keys import CHECKPOINT_BEFORE_KEY, CHECKPOINT_KEY
from freshness_pipeline.hudi.metadata import HudiTableMetadata
from freshness_pipeline.hudi.streamer_checkpoint import STREAMER_CHECKPOINT_KEY
from freshness_pipeline.hudi.write import STALE_CHECKPOINT_MARKER
from freshness_pipeline.ingestion.ingest import IngestConfig, Ingestor
from freshness_pipeline.ingestion.master import load_company_master
from freshness_pipeline.ingestion.validate import REJECT_REASONS, validate_record
from freshness_pipeline.stream.generator import StreamConfig
from freshness_pipeline.stream.landing import list_landed, write_landed
from freshness_pipeline.stream.replayer import (
    MALFORMED_KINDS,
    VirtualClock,
    generated_batches,
    land_instantly,
)
from freshness_pipeline.stream.universe import company_universe

pytestmark = pytest.mark.spark

UNIVERSE = 400


def land(settings: Settings, seconds: int, rate: float, malformed: float, seed: int = 1):
    """Lands `seconds` of stream (one file per stream per event second); returns the
    expected good and rejected line counts per stream, computed by the validator."""
    land_instantly(
        generated_batches(StreamConfig(seed=seed, rate=rate, universe_size=UNIVERSE)),
        settings.landing_dir,
        seconds,
        VirtualClock(1_700_000_000.0),
        malformed_rate=malformed,
    )
    symbols = {c.symbol for c in company_universe(UNIVERSE)}
    expected = {}
    for stream in ("price", "trade"):
        good = bad = 0
        for f in list_landed(settings.landing_dir, stream):
            for line in f.path.read_text().splitlines():
                record, _ = validate_record(stream, line, symbols)
                good, bad = (good + 1, bad) if record else (good, bad + 1)
        expected[stream] = (good, bad)
    return expected


def table_counts(spark, settings: Settings, table: str) -> tuple[int, int]:
    df = spark.read.format("hudi").load(settings.table_uri(table))
    return df.count(), df.select("event_id").distinct().count()


def committed_counts(spark, settings: Settings, table: str) -> tuple[int, int]:
    """As table_counts, over the committed files only, as the runs read. Hudi's plain
    reader also counts the files of a failed write older than the table's first completed
    commit until the lazy rollback of failed writes (execution/test_failed_first_write.py):
    through the service, a batch refused by the fence in the table's first commit leaves
    a whole write's files so."""
    from freshness_pipeline.execution.batch_oracle import read_table

    uri = settings.table_uri(table)
    df = read_table(spark, uri, HudiTableMetadata(uri).uncompleted_instants())
    return df.count(), df.select("event_id").distinct().count()


def test_quarantine_watermark_and_checkpoint(spark, lakehouse: Settings):
    load_company_master(spark, lakehouse, UNIVERSE)
    expected = land(lakehouse, seconds=3, rate=400, malformed=0.05)
    ingestor = Ingestor(spark, lakehouse, IngestConfig(max_files_per_commit=2))
    results = ingestor.ingest_once() + ingestor.ingest_once()
    assert [r.stream for r in results] == ["price", "trade", "price", "trade"]
    # each commit's Spark work, as ingestion's JVM counted it (hudi/step_cpu.py)
    assert all(r.cpu["tasks"] >= 1 and r.cpu["task_cpu_s"] > 0 for r in results), results
    assert ingestor.ingest_once() == []  # everything landed is committed
    assert list_landed(lakehouse.landing_dir, "price") == []  # and cleaned up

    for stream, table in (("price", "price_raw"), ("trade", "trade_raw")):
        rows, distinct = table_counts(spark, lakehouse, table)
        assert rows == distinct == expected[stream][0]
        meta = HudiTableMetadata(lakehouse.table_uri(table))
        commits = meta.commits()
        assert [c.extra[CHECKPOINT_KEY] for c in commits] == ["1", "2"]
        arrivals = (
            spark.read.format("hudi")
            .load(lakehouse.table_uri(table))
            .selectExpr("max(unix_micros(arrival_ts)) hi")
            .first()["hi"]
        )
        assert meta.watermark_us() == arrivals
        low, high = commits[-1].arrival_range_us
        assert low <= high == arrivals
    rejects = spark.read.format("hudi").load(lakehouse.table_uri("raw_rejects"))
    by_reason = {r["reason"]: r["count"] for r in rejects.groupBy("reason").count().collect()}
    assert set(by_reason) == set(MALFORMED_KINDS) and set(by_reason) <= set(REJECT_REASONS)
    assert sum(by_reason.values()) == expected["price"][1] + expected["trade"][1]
    sample = rejects.where("reason = 'bad_json'").first()
    assert sample["raw_line"] and sample["landing_file"] and sample["detail"]


def test_one_commit_in_clean_every_cleans(spark, lakehouse: Settings, monkeypatch):
    """Each stream's first commit cleans, then one in `clean_every`; the others commit
    their rows and checkpoint alike."""
    import freshness_pipeline.ingestion.ingest as ingest

    load_company_master(spark, lakehouse, UNIVERSE)
    land(lakehouse, seconds=3, rate=200, malformed=0.0)
    cleaned: dict[str, list[str]] = {}
    real = ingest.raw_write_options

    def seen(settings, table, metadata, clean=True):
        options = real(settings, table, metadata, clean=clean)
        cleaned.setdefault(table, []).append(options["hoodie.clean.automatic"])
        return options

    monkeypatch.setattr(ingest, "raw_write_options", seen)
    ingestor = Ingestor(spark, lakehouse, IngestConfig(max_files_per_commit=1, clean_every=2))
    while ingestor.ingest_once():
        pass
    assert cleaned == {t: ["true", "false", "true"] for t in ("price_raw", "trade_raw")}
    for table in ("price_raw", "trade_raw"):
        commits = HudiTableMetadata(lakehouse.table_uri(table)).commits()
        assert [c.extra[CHECKPOINT_KEY] for c in commits] == ["0", "1", "2"]
    with pytest.raises(ValueError, match="clean_every must be at least 1"):
        IngestConfig(clean_every=0)


@pytest.mark.parametrize("write", ["insert", "bulk_insert"])
def test_a_batch_of_rejects_only_commits_empty_and_moves_the_checkpoint(
    spark, lakehouse: Settings, write
):
    """Every line of the first batches malformed: each still commits (empty, its rejects
    quarantined) so the checkpoint moves on, the table's first commit too; then good rows
    commit after them. Both raw write operations (FRESHNESS_INGEST_WRITE)."""
    load_company_master(spark, lakehouse, UNIVERSE)
    for seq in (0, 1):
        lines = ["{not json", '{"event_id": "x"}', "[]"]
        write_landed(lakehouse.landing_dir, "price", seq, 1_700_000_000_000_000 + seq, lines)
    settings = replace(lakehouse, ingest_write=write)
    ingestor = Ingestor(spark, settings, IngestConfig(max_files_per_commit=1, keep_landed=True))
    for seq in (0, 1):
        result = ingestor.ingest_stream("price")
        assert result is not None and result.rows == 0 and result.rejects > 0
        assert ingestor.checkpoint("price")[0] == result.checkpoint == seq
    assert table_counts(spark, lakehouse, "price_raw") == (0, 0)
    commits = HudiTableMetadata(lakehouse.table_uri("price_raw")).commits()
    assert [c.extra[CHECKPOINT_KEY] for c in commits] == ["0", "1"]
    good = land(lakehouse, seconds=3, rate=100, malformed=0.0, seed=2)
    assert min(f.seq for f in list_landed(lakehouse.landing_dir, "price", after_seq=1)) == 2
    while ingestor.ingest_stream("price") is not None:
        pass
    rows, distinct = table_counts(spark, lakehouse, "price_raw")
    assert rows == distinct == good["price"][0] > 0


@pytest.mark.parametrize("write", ["bulk_insert", "insert"])
def test_a_batch_read_twice_commits_once(spark, lakehouse: Settings, write):
    """Two ingestors that read the same batch from the same checkpoint (a killed one whose
    write a shared Spark server finishes, and its restart): the second commit is refused
    under the table's lock (jvm/CheckpointConflictResolutionStrategy.java), Hudi rolls its
    files back, and the rows are in the table once. Both sources' checkpoint keys, both
    raw write operations (FRESHNESS_INGEST_WRITE)."""
    load_company_master(spark, lakehouse, UNIVERSE)
    land(lakehouse, seconds=2, rate=200, malformed=0.0)
    settings = replace(lakehouse, ingest_write=write)
    ingestor = Ingestor(spark, settings, IngestConfig(max_files_per_commit=1, keep_landed=True))
    sources = {
        "price": lambda end: {CHECKPOINT_KEY: end},
        "trade": lambda end: {STREAMER_CHECKPOINT_KEY: f"trade_topic,0:{end}"},
    }
    for stream, position in sources.items():
        table = f"{stream}_raw"
        first = ingestor.reader.read(stream, -1).batch
        ingestor._write_raw(stream, first, {**position(0), CHECKPOINT_BEFORE_KEY: ""}, None)
        rows = table_counts(spark, lakehouse, table)
        with pytest.raises(Exception, match=STALE_CHECKPOINT_MARKER):
            ingestor._write_raw(stream, first, {**position(0), CHECKPOINT_BEFORE_KEY: ""}, None)
        assert table_counts(spark, lakehouse, table) == rows  # the first batch once
        # from the table's checkpoint, the next batch commits
        before = str(position(0).popitem()[1])
        second = ingestor.reader.read(stream, 0).batch
        ingestor._write_raw(stream, second, {**position(1), CHECKPOINT_BEFORE_KEY: before}, None)
        count, distinct = table_counts(spark, lakehouse, table)
        assert count == distinct == rows[0] + second.row_count


def test_missing_master_is_a_clear_error(spark, lakehouse: Settings):
    with pytest.raises(FileNotFoundError, match="company_master.*load-master"):
        Ingestor(spark, lakehouse)


def _inflight(table_path: Path) -> bool:
    timeline = table_path / ".hoodie" / "timeline"
    if not timeline.is_dir():
        return False
    names = {p.name for p in timeline.iterdir()}
    for name in names:
        if name.endswith(".inflight"):
            instant = name.split(".")[0]
            if not any(n.startswith(instant + "_") for n in names):
                return True
    return False


@pytest.mark.parametrize("ingest_spark", ["own", "service"])
def test_exactly_once_across_killed_ingestion(request, spark, lakehouse: Settings, ingest_spark):
    """Killed with -9 twice in the middle of a commit. With its own Spark driver the
    commit dies with it; through the Spark service the server may finish it after the
    client is gone, while the next ingestor reads the same batch: the checkpoint fence
    lets one of the two commit."""
    load_company_master(spark, lakehouse, UNIVERSE)
    expected = land(lakehouse, seconds=12, rate=300, malformed=0.02, seed=7)
    env = child_env(lakehouse)
    env["FRESHNESS_INGEST_SPARK"] = ingest_spark
    if ingest_spark == "service":
        env["FRESHNESS_SPARK_REMOTE"] = request.getfixturevalue("spark_service").url
    argv = [
        sys.executable,
        "-m",
        "freshness_pipeline.cli",
        "ingest",
        "--commit-interval",
        "0.1",
        "--max-files",
        "2",
    ]
    price_path = lakehouse.table_path("price_raw")
    kills = 0
    for _ in range(2):
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        # Kill it hard while a commit is in flight (data files written, not committed).
        while time.monotonic() < deadline and proc.poll() is None:
            if _inflight(price_path) or _inflight(lakehouse.table_path("trade_raw")):
                proc.send_signal(signal.SIGKILL)
                kills += 1
                break
            time.sleep(0.02)
        proc.wait(timeout=30)
    assert kills == 2, "ingestion was never caught in the middle of a commit"
    # A fresh process rolls back the failed commits and ingests the rest.
    ingestor = Ingestor(spark, lakehouse, IngestConfig(max_files_per_commit=50))
    while ingestor.ingest_once():
        pass
    for stream, table in (("price", "price_raw"), ("trade", "trade_raw")):
        rows, distinct = committed_counts(spark, lakehouse, table)
        assert rows == distinct == expected[stream][0], table
    rejects = spark.read.format("hudi").load(lakehouse.table_uri("raw_rejects"))
    assert rejects.count() == rejects.select("reject_id").distinct().count()
    assert rejects.count() == expected["price"][1] + expected["trade"][1]
    raw = spark.read.format("hudi").load(lakehouse.table_uri("trade_raw"))
    sample = json.loads(json.dumps(raw.select("symbol", "price", "size").first().asDict()))
    assert sample["price"] > 0 and sample["size"] > 0


def test_a_stop_ingests_everything_that_landed_before_it(spark, lakehouse: Settings):
    """Issue 15: Ctrl-C no longer leaves landed events behind. SIGINT to a running
    `freshness ingest` with a backlog lands every file in the raw tables before it exits."""
    load_company_master(spark, lakehouse, UNIVERSE)
    expected = land(lakehouse, seconds=20, rate=300, malformed=0.02, seed=9)
    argv = [
        sys.executable,
        "-m",
        "freshness_pipeline.cli",
        "ingest",
        "--commit-interval",
        "60",
        "--max-files",
        "4",
    ]
    proc = subprocess.Popen(
        argv, env=child_env(lakehouse), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 180
    # Wait for the first commit (4 of 20 files per stream), then stop it.
    while time.monotonic() < deadline and not _committed(lakehouse, "trade_raw"):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=240) == 0
    assert not list_landed(lakehouse.landing_dir, "price")
    assert not list_landed(lakehouse.landing_dir, "trade")
    for stream, table in (("price", "price_raw"), ("trade", "trade_raw")):
        assert table_counts(spark, lakehouse, table) == (expected[stream][0],) * 2


def _committed(settings: Settings, table: str) -> bool:
    try:
        return HudiTableMetadata(settings.table_uri(table)).latest_commit() is not None
    except Exception:
        return False
