"""The clustering decision (pure): which files merge, when a run pays, why it waits."""

from __future__ import annotations

import pytest

from freshness_pipeline.scheduling.clustering import (
    HEARTBEAT_EXPIRY_S,
    MIB,
    ClusteringSettings,
    PendingClustering,
    TableFile,
    TableState,
    decide,
    decode_groups,
    encode_groups,
    group_files,
    request_for,
)
from freshness_pipeline.scheduling.planner import (
    CostModel,
    JobState,
    PendingInput,
    PlanRequest,
    plan,
)
from freshness_pipeline.scheduling.units import US_PER_S

NOW = 1_700_000_000 * US_PER_S
SETTINGS = ClusteringSettings(min_files=4, max_span_s=60, small_file_bytes=10 * MIB)


def raw_file(n: int, partition: str = "A", size: int = MIB, span_s: int = 10) -> TableFile:
    """The n-th commit's file: arrivals [10 n, 10 n + span) s, written by instant n."""
    low = NOW + n * 10 * US_PER_S
    return TableFile(
        partition, f"f{partition}{n}", size, low, low + span_s * US_PER_S - 1, f"{n:017d}"
    )


def state(files, consumed_us=None, **kw) -> TableState:
    return TableState(
        "price_raw",
        tuple(files),
        NOW + 10_000 * US_PER_S if consumed_us is None else consumed_us,
        consumers=("price_aggr",),
        **kw,
    )


def test_groups_follow_arrival_order_and_never_exceed_the_span():
    files = [raw_file(n) for n in (5, 0, 3, 1, 4, 2, 6, 7, 8, 9, 10, 11, 12)]
    groups = group_files(files, SETTINGS)
    assert [g.file_ids for g in groups] == [
        ("fA0", "fA1", "fA2", "fA3", "fA4", "fA5"),
        ("fA6", "fA7", "fA8", "fA9", "fA10", "fA11"),
    ]  # fA12 is alone in its window: no group
    assert all(g.span_s <= SETTINGS.max_span_s for g in groups)
    assert groups[0].size_bytes == 6 * MIB


def test_files_far_apart_are_never_merged_even_when_few():
    files = [raw_file(0), raw_file(100), raw_file(200)]
    assert group_files(files, SETTINGS) == []


def test_groups_stay_in_their_partition_and_within_one_output_file():
    settings = ClusteringSettings(
        min_files=1, max_span_s=600, small_file_bytes=4 * MIB, target_file_bytes=5 * MIB
    )
    files = [raw_file(n, p, size=2 * MIB) for p in ("A", "B") for n in range(4)]
    groups = group_files(files, settings)
    assert {g.partition for g in groups} == {"A", "B"}
    assert all(len({f[1] for f in g.file_ids}) == 1 for g in groups)  # fA.. or fB..
    assert all(g.size_bytes <= settings.target_file_bytes for g in groups)
    assert sorted(len(g.file_ids) for g in groups) == [2, 2, 2, 2]


def test_unknown_arrival_and_large_files_are_left_alone():
    unknown = TableFile("A", "fx", MIB, None, None, "0")
    large = raw_file(1, size=20 * MIB)
    decision = decide(state([unknown, large, raw_file(2)]), SETTINGS, NOW)
    assert not decision.launch
    assert decision.small_files == 2  # the unknown one is small, but never grouped
    assert decision.files_removed == 0


def test_launches_when_a_run_removes_enough_files():
    files = [raw_file(n) for n in range(6)]
    decision = decide(state(files), SETTINGS, NOW)
    assert decision.launch
    assert decision.files_removed == 5  # six files into one
    assert "removes 5 files" in decision.reason
    assert decision.input_files == 6


def test_waits_below_the_threshold_and_says_how_far():
    files = [raw_file(n) for n in range(3)]
    decision = decide(state(files), SETTINGS, NOW)
    assert not decision.launch
    assert "would remove 2 files, below the 4" in decision.reason


def test_pending_files_are_left_to_the_planner():
    """Files a consumer has not read keep their own arrival range, so PMB's subsets are
    unchanged: only files every consumer has read are merged."""
    files = [raw_file(n) for n in range(12)]
    consumed = files[5].arrival_max_us  # the consumer has read files 0-5
    decision = decide(state(files, consumed_us=consumed), SETTINGS, NOW)
    assert decision.launch
    merged = {fid for g in decision.groups for fid in g.file_ids}
    assert merged == {f"fA{n}" for n in range(6)}
    assert decision.pending_small_files == 6
    assert "6 still pending for the jobs" in decision.reason


def test_candidate_sets_are_the_same_before_and_after():
    """The planner's candidate table for a consumer is computed from its pending files only;
    clustering touches none of them, so the table is the same with or without the run."""
    files = [raw_file(n) for n in range(12)]
    consumed = files[5].arrival_max_us
    decision = decide(state(files, consumed_us=consumed), SETTINGS, NOW)
    merged = {fid for g in decision.groups for fid in g.file_ids}
    pending = [f for f in files if f.arrival_max_us > consumed]
    assert not merged & {f.file_id for f in pending}
    job = JobState(
        "price_aggr",
        consumed,
        files[-1].arrival_max_us,
        tuple(
            PendingInput(f.file_id, f.size_bytes, f.arrival_min_us, f.arrival_max_us)
            for f in pending
        ),
        CostModel(1.0, 1e-8),
    )
    before = plan(PlanRequest([job], 3, NOW)).launches[0].candidates
    assert len(before) == len(pending)  # one cutoff per pending file: full granularity


def test_nothing_is_read_while_a_consumer_never_ran():
    files = [raw_file(n) for n in range(12)]
    decision = decide(
        TableState("price_raw", tuple(files), None, consumers=("price_aggr",)), SETTINGS, NOW
    )
    assert not decision.launch
    assert "none read yet by every consumer (price_aggr)" in decision.reason


def test_a_table_nobody_reads_is_all_read():
    files = [raw_file(n) for n in range(6)]
    decision = decide(TableState("sector_vwap", tuple(files), None), SETTINGS, NOW)
    assert decision.launch


def test_counts_small_files_since_the_last_clustering():
    files = [raw_file(n) for n in range(6)]
    decision = decide(state(files, last_clustering_instant=f"{3:017d}"), SETTINGS, NOW)
    assert decision.new_small_files == 2
    assert "2 since the last clustering" in decision.reason


def test_waits_for_an_active_writer_run():
    files = [raw_file(n) for n in range(6)]
    decision = decide(state(files, active_run="a run of price_raw is active"), SETTINGS, NOW)
    assert not decision.launch
    assert decision.reason == "a run of price_raw is active"


def test_backs_off_after_failures_then_resumes_the_pending_plan():
    files = [raw_file(n) for n in range(6)]
    pending = (PendingClustering("20261123180000000", None, HEARTBEAT_EXPIRY_S + 1),)
    waiting = decide(
        state(files, pending=pending, failed_runs=2, retry_after_us=NOW + 7 * US_PER_S),
        SETTINGS,
        NOW,
    )
    assert not waiting.launch
    assert "backing off after 2 failed clustering run(s): retry in 7 s" in waiting.reason
    resumed = decide(
        state(files, pending=pending, failed_runs=2, retry_after_us=NOW - 1), SETTINGS, NOW
    )
    assert resumed.launch
    assert resumed.resume == ("20261123180000000",)
    assert resumed.groups == ()  # nothing new until the pending plan is done
    assert resumed.attempt == 2


def test_a_live_heartbeat_means_someone_is_executing_it():
    files = [raw_file(n) for n in range(6)]
    old = HEARTBEAT_EXPIRY_S + 300
    live = (PendingClustering("20261123180000000", 10.0, old),)
    decision = decide(state(files, pending=live), SETTINGS, NOW)
    assert not decision.launch
    assert "may still be executing: its heartbeat is 10 s old" in decision.reason
    expired = (PendingClustering("20261123180000000", HEARTBEAT_EXPIRY_S + 1, old),)
    assert decide(state(files, pending=expired), SETTINGS, NOW).resume == ("20261123180000000",)


def test_a_new_instant_without_a_heartbeat_is_not_taken_for_abandoned():
    # Its driver writes the inflight file, then starts beating: a run that looked in
    # between and rolled it back would delete the files the driver then commits.
    files = [raw_file(n) for n in range(6)]
    starting = (PendingClustering("20261123180000000", None, 3.0),)
    decision = decide(state(files, pending=starting), SETTINGS, NOW)
    assert not decision.launch
    assert "went pending 3 s ago, no heartbeat yet" in decision.reason
    old = (PendingClustering("20261123180000000", None, HEARTBEAT_EXPIRY_S + 1),)
    assert decide(state(files, pending=old), SETTINGS, NOW).resume == ("20261123180000000",)


def test_every_pending_instant_must_be_abandoned_before_a_resume():
    files = [raw_file(n) for n in range(6)]
    pending = (
        PendingClustering("20261123170000000", None, HEARTBEAT_EXPIRY_S + 50),
        PendingClustering("20261123180000000", 30.0, HEARTBEAT_EXPIRY_S + 10),
    )
    decision = decide(state(files, pending=pending), SETTINGS, NOW)
    assert not decision.launch
    assert "clustering 20261123180000000 may still be executing" in decision.reason


def test_external_tables_are_never_clustered():
    files = [raw_file(n) for n in range(6)]
    decision = decide(
        TableState("price_raw", tuple(files), NOW + 10_000 * US_PER_S, external=True), SETTINGS, NOW
    )
    assert not decision.launch
    assert "someone else writes" in decision.reason


def test_max_groups_takes_the_oldest_first():
    settings = ClusteringSettings(min_files=1, max_span_s=20, max_groups=2)
    files = [raw_file(n) for n in range(10)]
    groups = group_files(files, settings)
    assert [g.file_ids for g in groups] == [("fA0", "fA1"), ("fA2", "fA3")]


def test_group_spec_round_trips_and_refuses_unsafe_names():
    groups = group_files([raw_file(n, p) for p in ("A", "B") for n in range(3)], SETTINGS)
    spec = encode_groups(groups)
    assert decode_groups(spec) == [(g.partition, g.file_ids) for g in groups]
    bad = group_files([raw_file(n, "A,B") for n in range(3)], SETTINGS)
    with pytest.raises(ValueError, match="cannot carry"):
        encode_groups(bad)
    with pytest.raises(ValueError, match="partition:fid"):
        decode_groups("no-separator")


def test_request_carries_the_reason_and_a_new_key_per_attempt():
    files = [raw_file(n) for n in range(6)]
    first = request_for(decide(state(files), SETTINGS, NOW), "20261123180000000")
    retry = request_for(
        decide(state(files, failed_runs=1, retry_after_us=NOW - 1), SETTINGS, NOW),
        "20261123180000000",
    )
    assert first.run_key != retry.run_key
    assert first.tags["freshness/clustering_table"] == "price_raw"
    assert "removes 5 files" in first.tags["freshness/clustering_reason"]
    assert first.tags["freshness/clustering_files_removed"] == "5"
    assert decode_groups(first.groups)[0][1] == tuple(f"fA{n}" for n in range(6))


def test_settings_are_checked():
    with pytest.raises(ValueError, match="small_file_bytes"):
        ClusteringSettings(small_file_bytes=10, target_file_bytes=5)
    with pytest.raises(ValueError, match="max_span_s"):
        ClusteringSettings(max_span_s=0)
    assert not ClusteringSettings(tables=()).enabled


def test_planner_counts_clustering_runs_against_k():
    job = JobState(
        "price_aggr", 0, 10 * US_PER_S, (PendingInput("f", 1, 1, 10 * US_PER_S),), CostModel(1, 0)
    )
    assert plan(PlanRequest([job], 1, NOW, other_runs=1)).launches == ()
    skipped = plan(PlanRequest([job], 1, NOW, other_runs=1)).skipped[0]
    assert skipped.reason == "no free slot (K=1, 0 running, 1 clustering)"
    assert len(plan(PlanRequest([job], 2, NOW, other_runs=1)).launches) == 1
    with pytest.raises(ValueError, match="other_runs"):
        plan(PlanRequest([job], 1, NOW, other_runs=-1))


def test_clustering_settings_from_the_environment():
    from freshness_pipeline.config.parsing import SettingsError
    from freshness_pipeline.config.settings import load_settings

    assert load_settings({}).clustering.tables == ("price_raw", "trade_raw")
    assert load_settings({"FRESHNESS_CLUSTERING_TABLES": "none"}).clustering.tables == ()
    both = load_settings({"FRESHNESS_CLUSTERING_TABLES": "trade_raw, trade_aggr"})
    assert both.clustering.tables == ("trade_raw", "trade_aggr")
    with pytest.raises(SettingsError, match="FRESHNESS_CLUSTERING_TABLES='nope'.*not one of"):
        load_settings({"FRESHNESS_CLUSTERING_TABLES": "nope"})
    with pytest.raises(SettingsError, match="FRESHNESS_CLUSTERING_TARGET_FILE_MB=8"):
        load_settings(
            {"FRESHNESS_CLUSTERING_SMALL_FILE_MB": "16", "FRESHNESS_CLUSTERING_TARGET_FILE_MB": "8"}
        )
    mib = load_settings({"FRESHNESS_CLUSTERING_SMALL_FILE_MB": "2"}).clustering.small_file_bytes
    assert mib == 2 * MIB


def test_clustering_writes_like_every_other_writer_of_the_table():
    from freshness_pipeline.execution.clustering_exec import clustering_options
    from freshness_pipeline.hudi.write import RAW_LAYOUTS, SHARED_OPTIONS, write_options

    spec = encode_groups(group_files([raw_file(n) for n in range(3)], SETTINGS))
    options = clustering_options("/locks/price_raw", SETTINGS, spec, fail_after_write=True)
    assert options["hoodie.write.concurrency.mode"] == "optimistic_concurrency_control"
    assert options["hoodie.clean.failed.writes.policy"] == "LAZY"
    assert options["hoodie.write.lock.filesystem.path"] == "file:///locks/price_raw"
    assert "hoodie.write.lock.conflict.resolution.strategy" not in options  # Hudi's own check
    assert options["freshness.clustering.groups"] == spec
    assert options["freshness.clustering.fail_after_write"] == "true"
    assert options["hoodie.clustering.plan.strategy.sort.columns"] == "arrival_ts"
    ingest = write_options(RAW_LAYOUTS["price_raw"], "insert")
    for key, value in SHARED_OPTIONS.items():  # same retention: cleans agree
        assert options[key] == ingest[key] == value
    # Every writer's markers are one file per data file (a writer killed with -9 keeps
    # them all, so its rollback removes every file it wrote: chaos run 6).
    assert options["hoodie.write.markers.type"] == ingest["hoodie.write.markers.type"]
    assert ingest["hoodie.write.markers.type"] == "DIRECT"
    with pytest.raises(ValueError, match="cannot pass through"):
        clustering_options("/locks/a,b", SETTINGS, spec)
    # Resuming plans nothing new: no groups key at all (Hudi cannot parse `k=`).
    assert "freshness.clustering.groups" not in clustering_options(None, SETTINGS)


def test_a_clustering_run_claims_the_same_writer_pool_as_the_asset():
    """Item 5: a job table is never clustered while a run of that asset is active, enforced
    by Dagster's pool (limit 1 in dagster.yaml), not by the sensor's timing."""
    from freshness_pipeline.orchestration.assets import build_job_assets
    from freshness_pipeline.orchestration.clustering_sensor import build_clustering_job, op_name
    from freshness_pipeline.scheduling.staleness_target import StalenessTarget

    asset = next(
        a for a in build_job_assets(StalenessTarget()) if a.key.to_user_string() == "trade_aggr"
    )
    asset_pools = {asset.op.pool}
    job = build_clustering_job("trade_aggr")
    assert {job.graph.node_named(op_name("trade_aggr")).definition.pool} == asset_pools
    assert asset_pools == {"hudi_writer/trade_aggr"}
    raw = build_clustering_job("price_raw")
    assert raw.graph.node_named(op_name("price_raw")).definition.pool == "hudi_writer/price_raw"
