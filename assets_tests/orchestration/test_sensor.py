"""The sensor over a fake metadata resource: several ticks, slots, skips, run keys, tags."""

from __future__ import annotations

import dagster as dg
import pytest
from dagster._core.test_utils import create_run_for_test

from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.config.scheduler_settings import DEFAULT_K, SchedulerSettings
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.hudi.metadata import PendingFile, TableNotFound
from freshness_pipeline.hudi.timeline import FileSlice
from freshness_pipeline.orchestration.resources import HudiMetadataResource
from freshness_pipeline.orchestration.sensor import (
    ASSET_TAG,
    aging_words,
    build_sensor,
    evaluate_tick,
    staleness_observations,
)
from freshness_pipeline.scheduling.planner import POLICIES, PlanRequest
from freshness_pipeline.scheduling.run_plan import PLAN_FIELD, RunPlan
from freshness_pipeline.scheduling.staleness_target import StalenessTarget
from freshness_pipeline.scheduling.timefmt import readable_utc
from freshness_pipeline.scheduling.units import US_PER_S

T0 = 1_700_000_000 * US_PER_S


class FakeTable:
    def __init__(self, name, watermark, files=(), committed=None):
        self.name, self.watermark, self.files = name, watermark, list(files)
        self.committed = committed  # per file: when its pending commit completed

    def watermark_us(self):
        return self.watermark

    def pending_files(self, t_done, with_footer=False):
        floor = -1 if t_done is None else t_done
        out = []
        for i, (size, lo, hi, footer_lo) in enumerate(self.files):
            if hi <= floor:
                continue
            fs = FileSlice("A", f"{self.name}-{i}", f"A/{self.name}-{i}.parquet", size, "1")
            footer = (footer_lo, hi) if with_footer else (None, None)
            out.append(
                PendingFile(
                    fs,
                    f"/lake/{self.name}/A/{self.name}-{i}.parquet",
                    max(lo, floor + 1),
                    hi,
                    ("1",),
                    *footer,
                    pending_since_us=None if self.committed is None else self.committed[i],
                )
            )
        return out


_LAKES: dict[str, dict[str, FakeTable]] = {}


class FakeHudiMetadata(HudiMetadataResource):
    """Tables live in a registry keyed by lake_id: Dagster rebuilds resources from their
    config, so state must not sit on the instance."""

    lake_id: str = ""
    settings = load_settings({})  # the default settings: no declared inputs

    def __init__(self, **kwargs):
        kwargs.setdefault("lake_id", f"lake{len(_LAKES)}")
        super().__init__(**kwargs)
        _LAKES.setdefault(self.lake_id, {})

    def add(self, table: FakeTable) -> FakeHudiMetadata:
        _LAKES[self.lake_id][table.name] = table
        return self

    def table(self, table: str):
        tables = _LAKES[self.lake_id]
        if table not in tables:
            raise TableNotFound(f"No Hudi table at /lake/{table}")
        return tables[table]


def raw_lake() -> FakeHudiMetadata:
    files = [
        (2 * 1024**2, T0 + i * 10 * US_PER_S + 1, T0 + (i + 1) * 10 * US_PER_S, T0)
        for i in range(6)
    ]
    lake = FakeHudiMetadata()
    lake.add(FakeTable("trade_raw", T0 + 60 * US_PER_S, files))
    lake.add(FakeTable("price_raw", T0 + 60 * US_PER_S, files))
    lake.add(FakeTable("company_master", None))
    return lake


def tick(lake, instance, **settings):
    """One tick; one table per run (the published plan) unless `chains="planned"` is
    given: most tests here are about what a single job's run carries."""
    settings.setdefault("chains", "off")
    return evaluate_tick(lake, instance, SchedulerSettings(**settings), now_us=T0 + 61 * US_PER_S)


def test_first_tick_launches_the_aggregates_and_explains_the_rest():
    with dg.instance_for_test() as instance:
        result, requests = tick(raw_lake(), instance)
    assert sorted(r.tags[ASSET_TAG] for r in requests) == ["price_aggr", "trade_aggr"]
    reasons = {s.job: s.reason for s in result.skipped}
    assert reasons["market_features"].startswith("waiting for upstream")
    # each input without data named, with where it was looked for
    assert reasons["sector_vwap"] == (
        "waiting for upstream: enriched_features has no data yet "
        "(No Hudi table at /lake/enriched_features)"
    )
    request = next(r for r in requests if r.tags[ASSET_TAG] == "trade_aggr")
    config = request.run_config["ops"]["trade_aggr"]["config"]
    plan = RunPlan.from_run(request)
    assert config["cutoff_u"] == str(plan.cutoff_us)
    assert len(config["files"]) == plan.file_count
    assert config["t_done_planned"] == "none"
    assert request.asset_selection == [dg.AssetKey("trade_aggr")]
    # its freshness check, not its exactness check (that one runs on its own schedule)
    assert request.asset_check_keys == [
        dg.AssetCheckKey(dg.AssetKey("trade_aggr"), "freshness_check")
    ]
    # A few readable tags; the rest of the decision in run config (and then metadata).
    assert set(request.tags) == {
        ASSET_TAG,
        "freshness/policy",
        "freshness/cutoff",
        "freshness/files",
        "freshness/launched_by",
    }
    assert request.tags["freshness/cutoff"] == readable_utc(plan.cutoff_us)
    assert request.tags["freshness/files"] == f"{plan.file_count} of {plan.pending_files} files"
    decision = config[PLAN_FIELD]
    for key in ("G_s", "E_s", "eta", "files_pending", "scan_mib", "cost_model", "u_us"):
        assert key in decision
    assert decision["cost_model"].startswith("prior:three_term")


def test_run_keys_are_idempotent_and_follow_the_state():
    with dg.instance_for_test() as instance:
        _, first = tick(raw_lake(), instance)
        _, again = tick(raw_lake(), instance)
        assert [r.run_key for r in first] == [r.run_key for r in again]
        lake = raw_lake()
        lake.add(FakeTable("trade_aggr", T0 + 30 * US_PER_S))
        _, moved = tick(lake, instance)
        keys = {r.tags[ASSET_TAG]: r.run_key for r in moved}
        assert keys["trade_aggr"] != {r.tags[ASSET_TAG]: r.run_key for r in first}["trade_aggr"]


def test_a_jobs_wait_counts_from_its_oldest_pending_commit():
    """The planner's aging clock: the completion of the oldest input commit a job has not
    consumed, read from the pending files (a file without one leaves the arrival to it)."""
    lake = raw_lake()
    files = [
        (2 * 1024**2, T0 + i * 10 * US_PER_S + 1, T0 + (i + 1) * 10 * US_PER_S, T0)
        for i in range(6)
    ]
    committed = [T0 + (i + 1) * 10 * US_PER_S + 2 * US_PER_S for i in range(6)]
    lake.add(FakeTable("trade_raw", T0 + 60 * US_PER_S, files, committed))
    with dg.instance_for_test() as instance:
        result, _ = tick(lake, instance, k=1, max_wait_s=120)
    waited = {c.job: c.waited_s for c in result.ranked}
    # now = T0 + 61 s; trade_raw's oldest pending commit completed at T0 + 12 s
    assert waited["trade_aggr"] == pytest.approx(49.0)
    assert waited["price_aggr"] == pytest.approx(61.0, abs=1e-3)  # oldest arrival, T0 + 1 us
    # Both never materialized, so both are aged: the longer wait ranks first.
    assert [c.job for c in result.ranked[:2]] == ["price_aggr", "trade_aggr"]
    assert all(c.aged.startswith("first materialization") for c in result.ranked[1:2])


def test_slots_running_runs_and_k():
    with dg.instance_for_test() as instance:
        create_run_for_test(
            instance,
            job_name="x",
            status=dg.DagsterRunStatus.STARTED,
            tags={ASSET_TAG: "trade_aggr"},
        )
        result, requests = tick(raw_lake(), instance, k=2)
        assert [r.tags[ASSET_TAG] for r in requests] == ["price_aggr"]
        assert {s.job: s.reason for s in result.skipped}["trade_aggr"] == "already running"
        create_run_for_test(
            instance,
            job_name="y",
            status=dg.DagsterRunStatus.STARTING,
            tags={ASSET_TAG: "price_aggr"},
        )
        result, requests = tick(raw_lake(), instance, k=2)
        assert requests == [] and result.free_slots == 0


def test_nothing_pending_is_an_explicit_skip_through_the_sensor():
    lake = FakeHudiMetadata()
    lake.add(FakeTable("trade_raw", T0)).add(FakeTable("price_raw", T0))
    lake.add(FakeTable("trade_aggr", T0)).add(FakeTable("price_aggr", T0))
    sensor_def = build_sensor(SchedulerSettings())
    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(instance=instance, resources={"hudi_meta": lake})
        result = sensor_def(context)
    assert isinstance(result, dg.SensorResult) and result.skip_reason is not None
    message = result.skip_reason.skip_message
    assert message.startswith("Nothing launched (3 free slots).")
    assert "trade_aggr: waits: no pending data" in message
    assert "market_features: waits: no pending data" in message
    assert "enriched_features: waits: waiting for upstream" in message
    # The tick history's row shows the cursor: the decision in one line. (The fake
    # watermarks are from 2023, but both aggregates hold all their raw tables hold: caught
    # up, not late.)
    assert result.cursor == "idle; 3 no pending data, 3 waiting for upstream", result.cursor
    assert "trade_aggr: waits: no pending data; staleness " in message
    assert "caught up with its inputs" in message


def test_sensor_emits_run_requests_over_several_ticks():
    sensor_def = build_sensor(SchedulerSettings(k=1))
    lake = raw_lake()
    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(instance=instance, resources={"hudi_meta": lake})
        first = sensor_def(context)
        assert len(first.run_requests) == 1
        chosen = first.run_requests[0].tags[ASSET_TAG]
        # the chosen job committed its cutoff; next tick picks the other one
        lake.add(FakeTable(chosen, RunPlan.from_run(first.run_requests[0]).cutoff_us))
        second = sensor_def(
            dg.build_sensor_context(instance=instance, resources={"hudi_meta": lake})
        )
        assert len(second.run_requests) == 1
        assert second.run_requests[0].tags[ASSET_TAG] != chosen


def test_footer_mode_widens_candidate_sets():
    with dg.instance_for_test() as instance:
        pending_plan, _ = tick(raw_lake(), instance, policy="pmb")
        footer_plan, footer_requests = tick(raw_lake(), instance, policy="pmb", tmin_mode="footer")
    assert pending_plan.ranked and footer_plan.ranked
    # Pending ranges: file i holds arrivals of (10 i s, 10 (i+1) s], so C(u) grows one file
    # per cutoff; the footer minimum is old (T0) for every file, so every C(u) holds all.
    for choice in pending_plan.ranked:
        counts = [c.file_count for c in choice.candidates]
        assert counts == list(range(1, choice.pending_files + 1)), counts
    for choice in footer_plan.ranked:
        assert {c.file_count for c in choice.candidates} == {choice.pending_files}
    for request in footer_requests:
        plan = RunPlan.from_run(request)
        assert plan is not None and plan.file_count == plan.pending_files
        assert not plan.is_subset


def test_cost_model_is_fitted_from_materialization_metadata():
    with dg.instance_for_test() as instance:
        for i in range(8):
            instance.report_runless_asset_event(
                dg.AssetMaterialization(
                    "trade_aggr",
                    metadata={
                        "bytes_read": (i + 1) * 1024**2,
                        "files_read": i + 1,
                        "duration_s": 5.0 + 0.5 * (i + 1),
                    },
                )
            )
        _, requests = tick(raw_lake(), instance)
    plans = {r.tags[ASSET_TAG]: RunPlan.from_run(r) for r in requests}
    assert plans["trade_aggr"].cost_model == "fit:three_term"
    assert plans["trade_aggr"].cost_fit.startswith("8 runs, rmse")
    # The fitted slope is the metadata's 0.5 s per MiB-and-file step, split between terms.
    assert plans["trade_aggr"].cost_a_s == pytest.approx(5.0, abs=0.6)
    assert plans["price_aggr"].cost_model.startswith("prior:")


def test_k_agrees_with_the_run_queue():
    assert f"max_concurrent_runs: {DEFAULT_K}" in (PROJECT_ROOT / "dagster.yaml").read_text()


@pytest.mark.parametrize("bad", [{"policy": "fifo"}, {"k": 0}, {"tmin_mode": "x"}, {"tick_s": 3}])
def test_bad_settings_refused(bad):
    with pytest.raises(ValueError):
        SchedulerSettings(**bad)


@pytest.mark.parametrize("policy", POLICIES)
def test_every_policy_launches_the_runnable_aggregates(policy):
    """Each policy the experiment runs goes through the sensor (not only the planner)."""
    with dg.instance_for_test() as instance:
        result, requests = tick(raw_lake(), instance, policy=policy, seed=7)
    assert sorted(r.tags[ASSET_TAG] for r in requests) == ["price_aggr", "trade_aggr"]
    for request in requests:
        assert request.tags["freshness/policy"] == policy
        files = request.run_config["ops"][request.tags[ASSET_TAG]]["config"]["files"]
        assert files, request.run_config


def test_a_failed_decision_is_retried_after_a_backoff_under_a_new_key():
    """Issue 15: the same decision after a failed run must not be dropped as a duplicate
    run key, or a job whose stream went quiet stays stale for ever."""
    with dg.instance_for_test() as instance:
        _, first = tick(raw_lake(), instance)
        trade = next(r for r in first if r.tags[ASSET_TAG] == "trade_aggr")
        assert RunPlan.from_run(trade).attempt == 0 and "freshness/retry" not in trade.tags
        run = create_run_for_test(
            instance,
            job_name="x",
            status=dg.DagsterRunStatus.STARTED,
            tags={ASSET_TAG: "trade_aggr"},
        )
        instance.report_run_failed(run)
        failed_at = instance.get_run_record_by_id(run.run_id).end_time
        assert failed_at is not None
        settings = SchedulerSettings(chains="off")
        during = int((failed_at + 2) * US_PER_S)
        result, requests = evaluate_tick(raw_lake(), instance, settings, now_us=during)
        assert "trade_aggr" not in [r.tags[ASSET_TAG] for r in requests]
        reason = {s.job: s.reason for s in result.skipped}["trade_aggr"]
        assert reason.startswith("backing off after 1 failed run(s)")
        after = int((failed_at + 6) * US_PER_S)
        _, requests = evaluate_tick(raw_lake(), instance, settings, now_us=after)
        retry = next(r for r in requests if r.tags[ASSET_TAG] == "trade_aggr")
        assert retry.run_key != trade.run_key
        assert retry.run_key.rsplit(":", 1)[0] == trade.run_key.rsplit(":", 1)[0]
        assert RunPlan.from_run(retry).attempt == 1
        assert retry.tags["freshness/retry"] == "1 after failed runs"
        # A success ends the streak: the next decision starts again at attempt 0.
        ok = create_run_for_test(
            instance,
            job_name="x",
            status=dg.DagsterRunStatus.SUCCESS,
            tags={ASSET_TAG: "trade_aggr"},
        )
        assert ok.status == dg.DagsterRunStatus.SUCCESS
        _, requests = evaluate_tick(raw_lake(), instance, settings, now_us=after)
        retry = next(r for r in requests if r.tags[ASSET_TAG] == "trade_aggr")
        assert RunPlan.from_run(retry).attempt == 0


def test_a_launching_tick_logs_every_job_and_records_staleness():
    sensor_def = build_sensor(SchedulerSettings(k=1, chains="off"))
    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(instance=instance, resources={"hudi_meta": raw_lake()})
        result = sensor_def(context)
        assert isinstance(result, dg.SensorResult) and len(result.run_requests) == 1
        launched = result.run_requests[0].tags[ASSET_TAG]
        assert (result.cursor or "").startswith(f"launch {launched}; ")
        assert "1 no free slot" in (result.cursor or "")
        # The raw tables have watermarks, the jobs none yet: nothing to record.
        assert result.asset_events == []


def test_a_chained_tick_says_each_step_of_the_run_in_words():
    sensor_def = build_sensor(SchedulerSettings(k=1))  # chains planned by default
    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(instance=instance, resources={"hudi_meta": raw_lake()})
        result = sensor_def(context)
        (request,) = result.run_requests
        root = request.tags[ASSET_TAG]
        assert (result.cursor or "").startswith(f"launch {root} +5; ")
    from freshness_pipeline.scheduling.chains import plan_chains
    from freshness_pipeline.scheduling.planner import CostModel, JobState, PendingInput
    from freshness_pipeline.scheduling.tick_report import describe_tick

    cheap = CostModel(2.0, 0.0)
    raw = (PendingInput("r/1", 10, T0 + 1, T0 + 10 * US_PER_S),)
    states = [
        JobState("a", T0, T0 + 10 * US_PER_S, raw, cheap, inputs=(("r", T0 + 10 * US_PER_S),)),
        JobState("b", T0, T0, (), cheap, inputs=(("a", T0),)),
    ]
    plan = plan_chains(PlanRequest(states, 1, T0 + 11 * US_PER_S, run_cost_s=4.0))
    report = describe_tick(plan, {"a": 11.0, "b": 11.0}, StalenessTarget(), ["a", "b"])
    assert report.lines[0].startswith("a: launch: 1 of 1 files up to ")
    assert "then b in the same run: the run removes 20.0 s in about 8.0 s" in report.lines[0]
    assert report.lines[1].startswith("b: in the run of a: after a, up to ")
    assert report.summary.startswith("launch a +1; ")


def test_staleness_observations_carry_the_samplers_staleness_and_the_target():
    target = StalenessTarget()
    t_done = {"trade_aggr": T0, "price_aggr": None}
    staleness = {"trade_aggr": 100.0, "price_aggr": None}
    events = staleness_observations(T0 + 100 * US_PER_S, None, t_done, staleness, target)
    assert [e.asset_key.to_user_string() for e in events] == ["trade_aggr"]
    meta = events[0].metadata
    assert meta["staleness_s"].value == 100.0 and meta["staleness_state"].value == "pass"
    assert meta["staleness_target_s"].value == 300.0
    assert meta["watermark"].value == "2023-11-14T22:13:20.000+00:00"
    with dg.instance_for_test() as instance:  # Dagster takes them as they are
        instance.report_runless_asset_event(events[0])
        recorded = instance.fetch_observations(dg.AssetKey("trade_aggr"), limit=1).records
        assert recorded[0].asset_observation.metadata["staleness_s"].value == 100.0


def test_a_caught_up_table_over_a_quiet_input_is_observed_as_caught_up():
    """The asset page's staleness points say how far the table is behind its inputs: a
    table holding all its inputs hold reads as caught up however old their newest row."""
    target = StalenessTarget()
    t_done = {"trade_aggr": T0, "price_aggr": T0}
    staleness = {"trade_aggr": 23_018_156.0, "price_aggr": 400.0}
    lag = {"trade_aggr": 0.0, "price_aggr": 30.0}
    events = staleness_observations(T0 + 100 * US_PER_S, None, t_done, staleness, target, lag)
    meta = {e.asset_key.to_user_string(): e.metadata for e in events}
    assert meta["trade_aggr"]["staleness_state"].value == "caught up"
    assert meta["trade_aggr"]["lag_behind_inputs_s"].value == 0.0
    assert meta["price_aggr"]["staleness_state"].value == "fail"
    assert meta["price_aggr"]["lag_behind_inputs_s"].value == 30.0


def test_the_sensor_records_staleness_on_its_first_tick():
    # (which later ticks record is observations_due's, tested in test_tick_report)
    lake = raw_lake()
    lake.add(FakeTable("trade_aggr", T0 + 60 * US_PER_S)).add(
        FakeTable("price_aggr", T0 + 60 * US_PER_S)
    )
    sensor_def = build_sensor(SchedulerSettings())
    with dg.instance_for_test() as instance:
        first = sensor_def(
            dg.build_sensor_context(instance=instance, resources={"hudi_meta": lake})
        )
    recorded = {e.asset_key.to_user_string(): e.metadata for e in first.asset_events}
    assert sorted(recorded) == ["price_aggr", "trade_aggr"]
    # a 2023 watermark at its inputs' own: caught up, 0 s behind them
    assert recorded["trade_aggr"]["staleness_state"].value == "caught up"
    assert recorded["trade_aggr"]["lag_behind_inputs_s"].value == 0.0
    lake.add(FakeTable("trade_aggr", T0))  # 60 s behind trade_raw: past the target
    with dg.instance_for_test() as instance:
        first = sensor_def(
            dg.build_sensor_context(instance=instance, resources={"hudi_meta": lake})
        )
    recorded = {e.asset_key.to_user_string(): e.metadata for e in first.asset_events}
    assert recorded["trade_aggr"]["staleness_state"].value == "fail"
    assert recorded["trade_aggr"]["lag_behind_inputs_s"].value == 60.0


@pytest.mark.parametrize(
    ("max_wait_s", "first", "words"),
    [
        (120, True, "aging: a job waiting over 120 s goes first, so does a first materialization"),
        (None, True, "aging: a first run goes first"),
        (300, False, "aging: a job waiting over 300 s goes first"),
        (None, False, "no aging"),
    ],
)
def test_the_sensor_says_its_aging_setting(max_wait_s, first, words):
    settings = SchedulerSettings(max_wait_s=max_wait_s, first_runs_first=first)
    assert aging_words(settings) == words
    assert words in (build_sensor(settings).description or "")


def test_a_planned_chain_is_one_run_with_each_steps_part_of_the_plan():
    """FRESHNESS_CHAINS=planned (the default): on a new lakehouse one run takes both
    aggregates (the root, and the other as a co-root with its own files) and every table
    below them; the planned asset's config and tags are as for a single run, each other
    step carries its own part of the plan, and the tags name the chain."""
    from freshness_pipeline.scheduling.run_plan import CHAINED_TAG, StepPlan

    with dg.instance_for_test() as instance:
        result, (request,) = tick(raw_lake(), instance, chains="planned")
        chain = [key.to_user_string() for key in request.asset_selection]
        root = request.tags[ASSET_TAG]
        assert chain[0] == root and set(chain[:2]) == {"trade_aggr", "price_aggr"}
        # the steps in dependency order (siblings by name)
        assert chain[2:] == [
            "market_features",
            "enriched_features",
            "industry_spike",
            "sector_vwap",
        ]
        assert request.tags[CHAINED_TAG] == ",".join(chain[1:])
        assert request.run_key.endswith("+" + ",".join(chain[1:]))
        plan = RunPlan.from_run(request)
        assert plan.chain == tuple(chain[1:]) and plan.run_cost_s == 3.0  # L's prior
        (launch,) = result.launches
        assert plan.gain_s == pytest.approx(launch.gain_s, abs=1e-3)
        assert launch.cost_s == pytest.approx(3.0 + sum(s.cost_s for s in launch.chain))
        ops = request.run_config["ops"]
        assert set(ops) == set(chain)
        co_root = ops[chain[1]]["config"]
        assert co_root["files"] and co_root["t_done_planned"] == "none"
        step = StepPlan.from_decision(chain[1], co_root[PLAN_FIELD])
        assert step is not None and step.is_root and step.root == root
        mf = StepPlan.from_decision("market_features", ops["market_features"]["config"][PLAN_FIELD])
        assert mf is not None and set(mf.after) == {"trade_aggr", "price_aggr"}
        assert "files" not in ops["market_features"]["config"]  # reads what its parents wrote
        assert mf.cutoff_us == T0 + 60 * US_PER_S
        # every other job says which run refreshes it
        reasons = {s.job: s.reason for s in result.skipped}
        assert reasons == {job: f"refreshed in the chain of {root}" for job in chain[1:]}


def test_a_chain_leaves_out_what_is_up_to_date_and_what_a_running_run_holds():
    lake = raw_lake()
    lake.add(FakeTable("price_aggr", T0 + 60 * US_PER_S))  # up to date: only trade_aggr runs
    with dg.instance_for_test() as instance:
        _, (request,) = tick(lake, instance, chains="planned")
        chain = ["trade_aggr", "market_features", "enriched_features"]
        chain += ["industry_spike", "sector_vwap"]
        assert request.asset_selection == [dg.AssetKey(name) for name in chain]
        # with price_aggr running, market_features would read its old commit: trade_aggr
        # runs alone, and market_features waits
        create_run_for_test(
            instance,
            job_name="price",
            status=dg.DagsterRunStatus.STARTED,
            tags={ASSET_TAG: "price_aggr"},
            asset_selection={dg.AssetKey("price_aggr")},
        )
        result, (request,) = tick(raw_lake(), instance, chains="planned")
        assert request.asset_selection == [dg.AssetKey("trade_aggr")]
        reasons = {s.job: s.reason for s in result.skipped}
        assert reasons["price_aggr"] == "already running"


def test_a_chained_run_takes_one_slot_and_holds_its_jobs():
    with dg.instance_for_test() as instance:
        create_run_for_test(
            instance,
            job_name="chain",
            status=dg.DagsterRunStatus.STARTED,
            tags={ASSET_TAG: "trade_aggr", "freshness/chained": "market_features"},
            asset_selection={dg.AssetKey("trade_aggr"), dg.AssetKey("market_features")},
        )
        result, requests = tick(raw_lake(), instance, k=2, chains="planned")
        assert [r.tags[ASSET_TAG] for r in requests] == ["price_aggr"]  # one slot left
        assert result.free_slots == 1
        skipped = {s.job: s.reason for s in result.skipped}
        assert skipped["trade_aggr"] == skipped["market_features"] == "already running"
        # and price_aggr's run chains nothing its running sibling holds
        assert requests[0].asset_selection == [dg.AssetKey("price_aggr")]


def test_the_sensor_plans_on_the_cost_prior_it_is_given():
    from freshness_pipeline.scheduling.cost_model import CostPrior
    from freshness_pipeline.scheduling.planner import CostModel

    prior = CostPrior((("trade_aggr", CostModel(1.5, 0.0, 0.001)),), 0.75, "calibration")
    with dg.instance_for_test() as instance:
        result, requests = tick(raw_lake(), instance, cost_prior=prior, chains="planned")
        assert result.launches
        assert all(run.run_cost_s == 0.75 for run in result.launches)  # L from the prior
        steps = {s.job: s for run in result.launches for s in run.chain}
        assert steps["trade_aggr"].cost_s == pytest.approx(1.5 + 0.001 * 6)
        assert steps["price_aggr"].cost_s > 20.0  # the built-in guess: a job it does not name
        assert all(RunPlan.from_run(r).run_cost_s == 0.75 for r in requests)


def test_runs_at_once_keeps_fewer_runs_in_flight_than_k():
    with dg.instance_for_test() as instance:
        result, requests = tick(raw_lake(), instance, k=3)  # one table per run
        assert len(requests) == 2  # both aggregates
        result, requests = tick(raw_lake(), instance, k=3, runs_at_once=1)
        assert len(requests) == 1 and result.free_slots == 1
    assert "1 run(s) at once" in (build_sensor(SchedulerSettings(runs_at_once=1)).description or "")


class UnreadableTable(FakeTable):
    """An input whose files cannot be read (a Lance base file, a corrupt footer)."""

    def pending_files(self, t_done, with_footer=False):
        raise OSError("Parquet magic bytes not found in footer: A/x.lance")


def test_an_unreadable_input_stops_only_the_jobs_that_read_it():
    lake = raw_lake()
    trades = _LAKES[lake.lake_id]["trade_raw"]
    lake.add(UnreadableTable("trade_raw", trades.watermark, trades.files))
    with dg.instance_for_test() as instance:
        result, requests = tick(lake, instance)
    # price_aggr is planned as usual; trade_aggr waits, naming its input and the reason
    assert [r.tags[ASSET_TAG] for r in requests] == ["price_aggr"]
    reasons = {s.job: s.reason for s in result.skipped}
    assert reasons["trade_aggr"] == (
        "waiting: input trade_raw cannot be read "
        "(OSError: Parquet magic bytes not found in footer: A/x.lance)"
    )
