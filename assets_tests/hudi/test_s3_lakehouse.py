"""The lakehouse on an S3 API (s3proxy on 127.0.0.1, started by the project's code): the
same feeder + runner + oracle pattern as the job tests, every table under
`s3://bucket/prefix`, Spark through s3a, hudi-rs and pyarrow with storage options; the
stale-plan guard holds with the table locks on a local folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from assets_tests.execution.oracle import ORDER, batch_recompute, differences
from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.config.settings import Settings, load_settings
from freshness_pipeline.execution import oracle as independent_oracle
from freshness_pipeline.execution.run_config import resolve_run
from freshness_pipeline.execution.runner import JobRunner, StalePlan
from freshness_pipeline.ingestion.feeder import StreamFeeder
from freshness_pipeline.orchestration.resources import HudiMetadataResource
from freshness_pipeline.runtime.object_store import (
    ObjectStoreConfig,
    ObjectStoreServer,
    check_object_store,
)
from freshness_pipeline.runtime.spark import apply_lakehouse_conf

pytestmark = pytest.mark.spark

BUCKET = "s3-lakehouse-tests"  # its own name: s3a caches one client per bucket per JVM


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ObjectStoreServer]:
    root = tmp_path_factory.mktemp("s3_lakehouse")
    config = ObjectStoreConfig(root / "data", root / "logs", bucket=BUCKET)
    with ObjectStoreServer(config) as server:
        yield server


@pytest.fixture
def s3_lakehouse(
    store: ObjectStoreServer, spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Settings:
    """Settings whose lakehouse is `s3://BUCKET/<test>` on the store; landing and table
    locks stay on local disk."""
    for name, value in store.settings_env(prefix=tmp_path.name).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("FRESHNESS_LANDING", str(tmp_path / "landing"))
    monkeypatch.setenv("FRESHNESS_LOCK_DIR", str(tmp_path / "locks"))
    settings = load_settings()
    check_object_store(settings)
    apply_lakehouse_conf(spark, settings)
    return settings


def _objects(store: ObjectStoreServer, prefix: str) -> list[str]:
    selector = pafs.FileSelector(f"{BUCKET}/{prefix}", recursive=True, allow_not_found=True)
    return [i.path for i in store.filesystem().get_file_info(selector)]


def test_six_jobs_on_s3_equal_both_oracles(spark, store, s3_lakehouse, tmp_path):
    settings = s3_lakehouse
    assert settings.table_uri("trade_aggr").startswith(f"s3a://{BUCKET}/")
    feeder = StreamFeeder(spark, settings, seed=21)
    runner = JobRunner(spark, settings.lakehouse)
    feeder.land(3)
    feeder.ingest()
    for job in ORDER:
        runner.run(JOBS[job], resolve_run(JOBS[job], [], None, feeder.meta))
    feeder.land(2)
    feeder.ingest()

    # The sensor's view, read from S3: pending files with their footers, through the
    # metadata resource (hudi-rs + pyarrow with the store's storage options).
    hudi_meta = HudiMetadataResource.for_settings(load_settings())
    t_done = hudi_meta.table("trade_aggr").watermark_us()
    pending = hudi_meta.table("trade_raw").pending_files(t_done, with_footer=True)
    assert pending, "new trades must be pending for trade_aggr"
    for file in pending:
        assert file.uri.startswith(f"s3a://{BUCKET}/{tmp_path.name}/trade_raw/")
        assert file.footer_max_us is not None and file.footer_max_us > t_done
        assert file.pending_min_us > t_done
    raw = hudi_meta.table("trade_raw")
    assert raw.row_count() == spark.read.format("hudi").load(raw.table_uri).count() > 0

    # A subset run (the files pending up to a cutoff) and then a drain, as ticks would.
    spec = JOBS["trade_aggr"]
    cutoff = min(p.pending_max_us for p in pending)
    picked = [p.uri for p in pending if p.pending_min_us <= cutoff]
    runner.run(spec, resolve_run(spec, picked, cutoff, feeder.meta))
    assert feeder.meta("trade_aggr").watermark_us() == cutoff
    final = feeder.meta("trade_raw").watermark_us()
    for job in ORDER:
        resolved = resolve_run(JOBS[job], [], None, feeder.meta)
        runner.run(JOBS[job], resolved)
        assert feeder.meta(job).watermark_us() == final, job

    expected = batch_recompute(spark, settings.table_uri, tmp_path / "oracle")
    for job in ORDER:
        missing, extra, examples = differences(spark, expected[job], settings.table_uri(job))
        assert (missing, extra) == (0, 0), f"{job} differs: {examples}"
    for difference in independent_oracle.check_lakehouse(settings.lakehouse.table):
        assert difference.equal, difference

    # Every table lives in the bucket; only the landing area and the locks are local.
    # Locks: the six jobs and the two streamed raw tables (ingestion writes them with OCC,
    # beside the clustering jobs); company_master is written once and takes none.
    stored = _objects(store, tmp_path.name)
    for table in ("price_raw", "trade_raw", "company_master", *ORDER):
        assert any(p.endswith(f"{table}/.hoodie/hoodie.properties") for p in stored), table
    assert not (tmp_path / "tables").exists()
    locked = sorted(p.name for p in (tmp_path / "locks").iterdir())
    assert locked == sorted([*ORDER, "price_raw", "trade_raw"])


def test_stale_plan_is_refused_on_s3(spark, s3_lakehouse):
    settings = s3_lakehouse
    feeder = StreamFeeder(spark, settings, seed=22)
    runner = JobRunner(spark, settings.lakehouse)
    feeder.land(2)
    feeder.ingest()
    spec = JOBS["trade_aggr"]
    runner.run(spec, resolve_run(spec, [], None, feeder.meta))
    feeder.land(2)
    feeder.ingest()
    first = resolve_run(spec, [], None, feeder.meta)
    second = resolve_run(spec, [], None, feeder.meta)
    assert first.t_done_us == second.t_done_us and not first.nothing_to_do
    runner.run(spec, first)
    watermark = feeder.meta(spec.name).watermark_us()
    commits = len(feeder.meta(spec.name).commits())
    with pytest.raises(StalePlan, match="STALE_PLAN"):
        runner.run(spec, second)
    assert feeder.meta(spec.name).watermark_us() == watermark
    assert len(feeder.meta(spec.name).commits()) == commits  # nothing committed


def test_raw_source_observation_reads_s3_and_keeps_keys_out(spark, store, s3_lakehouse):
    """The raw tables' observation (commit, rows from footers, watermark) on S3; no key
    in the metadata Dagster records."""
    from freshness_pipeline.orchestration.raw_sources import observe_table

    settings = s3_lakehouse
    feeder = StreamFeeder(spark, settings, seed=24)
    feeder.land(1)
    feeder.ingest()
    observed = observe_table(HudiMetadataResource.for_settings(load_settings()), "trade_raw")
    rows = spark.read.format("hudi").load(settings.table_uri("trade_raw")).count()
    assert observed.metadata["dagster/row_count"] == rows > 0
    assert observed.metadata["watermark_us"] == feeder.meta("trade_raw").watermark_us()
    shown = str(observed.metadata)
    assert store.config.secret_key not in shown and store.config.access_key not in shown
