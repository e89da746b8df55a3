"""The clustering sensor over fake metadata: launches with the reason in tags, waits and
says why (active runs, failures with backoff, live plans), and takes run-queue slots."""

from __future__ import annotations

import dagster as dg
from dagster._core.test_utils import create_run_for_test

from assets_tests.orchestration.test_sensor import FakeHudiMetadata, FakeTable, raw_lake
from freshness_pipeline.config.scheduler_settings import SchedulerSettings
from freshness_pipeline.hudi.metadata import PendingFile
from freshness_pipeline.hudi.timeline import Commit, FileSlice
from freshness_pipeline.orchestration.clustering_sensor import (
    evaluate_clustering,
    job_name,
    op_name,
)
from freshness_pipeline.orchestration.sensor import ASSET_TAG, evaluate_tick
from freshness_pipeline.scheduling.clustering import TABLE_TAG, ClusteringSettings, decode_groups
from freshness_pipeline.scheduling.units import US_PER_S

T0 = 1_700_000_000 * US_PER_S
SETTINGS = ClusteringSettings(tables=("price_raw",), min_files=4, max_span_s=60)


class FakeRawTable(FakeTable):
    """A raw table of twelve 10-second commits, one small file each, in partition A."""

    def __init__(self, name, pending=(), uncompleted=()):
        super().__init__(name, T0 + 120 * US_PER_S)
        self.pending = list(pending)
        self.uncompleted = list(uncompleted)

    def latest_commit(self):
        return Commit("00000000000000012", "00000000000000012", "commit", "INSERT", (), {}, {})

    def commits(self):
        return [
            Commit(f"{n:017d}", f"{n:017d}", "commit", "INSERT", (), {}, {}) for n in range(1, 13)
        ]

    def uncompleted_instants(self):
        return [*self.uncompleted, *(p[0] for p in self.pending)]

    def last_clustering(self):
        return None

    def pending_clustering(self, now_s=None):
        return self.pending

    def pending_files(self, t_done, with_footer=False):
        out = []
        for n in range(12):
            low, high = T0 + n * 10 * US_PER_S + 1, T0 + (n + 1) * 10 * US_PER_S
            if t_done is not None and high <= t_done:
                continue
            fs = FileSlice("A", f"f{n}", f"A/f{n}.parquet", 1024, f"{n:017d}")
            out.append(PendingFile(fs, f"/lake/{self.name}/A/f{n}.parquet", low, high, ()))
        return out


def lake(read_up_to_s: int = 120, pending=(), uncompleted=()) -> FakeHudiMetadata:
    fake = FakeHudiMetadata()
    fake.add(FakeRawTable("price_raw", pending, uncompleted))
    fake.add(FakeTable("price_aggr", T0 + read_up_to_s * US_PER_S))
    return fake


def test_launches_a_run_of_the_table_job_with_the_reason_in_its_tags():
    with dg.instance_for_test() as instance:
        decisions, requests = evaluate_clustering(lake(), instance, SETTINGS, T0)
    assert [d.table for d in decisions] == ["price_raw"] and len(requests) == 1
    request = requests[0]
    assert request.job_name == job_name("price_raw")
    config = request.run_config["ops"][op_name("price_raw")]["config"]
    groups = decode_groups(config["groups"])
    assert [fids for _, fids in groups] == [
        tuple(f"f{n}" for n in range(6)),
        tuple(f"f{n}" for n in range(6, 12)),
    ]
    assert request.tags[TABLE_TAG] == "price_raw"
    assert "removes 10 files" in request.tags["freshness/clustering_reason"]


def test_only_files_the_readers_have_read_and_why_it_waits():
    with dg.instance_for_test() as instance:
        decisions, requests = evaluate_clustering(lake(read_up_to_s=30), instance, SETTINGS, T0)
    assert requests == []
    assert "9 still pending for the jobs (left alone)" in decisions[0].reason
    assert "would remove 2 files, below the 4" in decisions[0].reason


def test_waits_for_an_active_clustering_run_and_backs_off_after_a_failure():
    with dg.instance_for_test() as instance:
        running = create_run_for_test(
            instance,
            job_name="cluster_price_raw",
            status=dg.DagsterRunStatus.STARTED,
            tags={TABLE_TAG: "price_raw"},
        )
        decisions, requests = evaluate_clustering(lake(), instance, SETTINGS, T0)
        assert requests == [] and "queued or running" in decisions[0].reason
        instance.report_run_failed(running)
        failed_at = instance.get_run_record_by_id(running.run_id).end_time
        pending = [("20261123180000000", None, 600.0)]
        during = int((failed_at + 2) * US_PER_S)
        decisions, requests = evaluate_clustering(lake(pending=pending), instance, SETTINGS, during)
        assert requests == []
        assert decisions[0].reason.startswith("backing off after 1 failed clustering run(s)")
        after = int((failed_at + 6) * US_PER_S)
        decisions, requests = evaluate_clustering(lake(pending=pending), instance, SETTINGS, after)
        assert len(requests) == 1 and requests[0].tags["freshness/clustering_attempt"] == "1"
        config = requests[0].run_config["ops"][op_name("price_raw")]["config"]
        assert config == {"groups": "", "resume": ["20261123180000000"]}
        live = [("20261123180000000", 5.0, 600.0)]
        decisions, requests = evaluate_clustering(lake(pending=live), instance, SETTINGS, after)
        assert requests == [] and "its heartbeat is 5 s old" in decisions[0].reason


def test_a_job_table_waits_while_a_run_of_its_asset_is_active():
    settings = ClusteringSettings(tables=("trade_aggr",), min_files=4, max_span_s=60)
    fake = lake()
    fake.add(FakeRawTable("trade_aggr"))
    with dg.instance_for_test() as instance:
        create_run_for_test(
            instance,
            job_name="x",
            status=dg.DagsterRunStatus.STARTED,
            tags={ASSET_TAG: "trade_aggr"},
        )
        decisions, requests = evaluate_clustering(fake, instance, settings, T0)
    assert requests == []
    assert "a run of trade_aggr is active" in decisions[0].reason


def test_a_clustering_run_takes_a_slot_from_the_jobs():
    with dg.instance_for_test() as instance:
        create_run_for_test(
            instance,
            job_name="cluster_price_raw",
            status=dg.DagsterRunStatus.STARTING,
            tags={TABLE_TAG: "price_raw"},
        )
        result, requests = evaluate_tick(
            raw_lake(), instance, SchedulerSettings(k=2, chains="off"), now_us=T0 + 61 * US_PER_S
        )
    assert len(requests) == 1
    assert any("1 clustering" in s.reason for s in result.skipped)


def test_a_write_killed_in_the_tables_first_commit_holds_the_clustering_back():
    """Hudi reads the files of a failed write older than the table's first completed commit
    as committed until its lazy rollback: a clustering would keep its rows."""
    with dg.instance_for_test() as instance:
        decisions, requests = evaluate_clustering(
            lake(uncompleted=["00000000000000000"]), instance, SETTINGS, T0
        )
        assert requests == []
        assert "a write killed in the table's first commit (00000000000000000)" in (
            decisions[0].reason
        )
        # a failed write after the first commit is not read as committed: no wait for it
        _, requests = evaluate_clustering(
            lake(uncompleted=["00000000000000005"]), instance, SETTINGS, T0
        )
        assert len(requests) == 1
