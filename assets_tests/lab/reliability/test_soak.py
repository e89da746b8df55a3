"""The soak's measures without a stack (what a Hudi table keeps on disk, the report's
verdicts on made-up samples), and one short soak of the real stack."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from freshness_pipeline.lab.reliability.soak import SoakReadings, TableStats, report, table_stats


def _touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")


def test_table_stats_counts_active_instants_and_old_slices(tmp_path: Path):
    table = tmp_path / "trade_aggr"
    assert table_stats(table) is None  # no commit yet
    timeline = table / ".hoodie" / "timeline"
    for name in ("1_2.commit", "3_4.commit", "5_6.clean", "7.commit.requested", "7.inflight"):
        _touch(timeline / name)
    _touch(timeline / "history" / "8_9.commit")  # archived: not active
    for name in ("g1_0-1-2_1.parquet", "g1_0-1-2_3.parquet", "g2_0-1-2_3.parquet"):
        _touch(table / "2026" / name)
    _touch(table / ".hoodie" / "metadata" / "files" / "x_1.parquet")  # not a data file
    assert table_stats(table) == TableStats(active_instants=3, base_files=3, file_groups=2)
    assert table_stats(table).old_slices == 1


def test_report_judges_memory_runs_and_restarts():
    grows = [(t * 60.0, 100.0 + 10 * t) for t in range(60)]  # +10 MiB a minute
    flat = [(t * 60.0, 300.0) for t in range(60)]
    stats = {"trade_aggr": [(0.0, TableStats(5, 4, 2)), (60.0, TableStats(9, 6, 4))]}
    text = report(
        60,
        2000,
        SoakReadings(rss={"ingest": grows, "spark": flat}, tables=stats, runs={"SUCCESS": 9}),
    )
    assert "| ingest |" in text and text.split("| ingest |")[1].split("\n")[0].endswith("**no** |")
    assert text.split("| spark |")[1].split("\n")[0].endswith("yes |")
    assert "| trade_aggr | 9 (9) | 6 | 4 | 2 (2) | no | - |" in text  # 9 commits: before cleaning
    workers = report(
        60, 2000, SoakReadings(rss={"dagster run workers": grows}, runs={"SUCCESS": 1})
    )
    assert workers.split("| dagster run workers |")[1].split("\n")[0].endswith("not judged |")
    cleaned = report(
        60,
        2000,
        SoakReadings(tables={"t": [(0.0, TableStats(31, 40, 20))]}, runs={"SUCCESS": 1}),
    )
    assert "| t | 31 (31) | 40 | 20 | 20 (20) | yes | - |" in cleaned
    assert "Clustering runs by status (part of the runs above): none." in cleaned
    assert "Failed or canceled: 0 (met" in text and "restart: 0." in text
    failing = report(
        60,
        2000,
        SoakReadings(runs={"SUCCESS": 9, "FAILURE": 1}, restarts=["ingest restarted"]),
    )
    assert "Failed or canceled: 1 (**missed**" in failing and "(ingest restarted)" in failing


def test_report_gives_the_snapshot_file_groups_last_and_largest():
    # A raw table clustered twice: the snapshot's groups fall back while the disk's grow
    # until the cleaner catches up.
    samples = [
        (0.0, TableStats(10, 260, 260, live_groups=260)),
        (30.0, TableStats(20, 520, 520, live_groups=None)),  # a sample hudi-rs could not read
        (60.0, TableStats(25, 546, 546, live_groups=30)),
        (90.0, TableStats(31, 572, 572, live_groups=56)),
    ]
    text = report(
        2,
        2000,
        SoakReadings(
            tables={"trade_raw": samples}, runs={"SUCCESS": 5}, clustering_runs={"SUCCESS": 2}
        ),
    )
    assert "| trade_raw | 31 (31) | 572 | 572 | 0 (0) | yes | 56 (260) |" in text
    assert "Clustering runs by status (part of the runs above): SUCCESS 2." in text


def test_report_judges_a_jvm_by_its_live_heap_after_gc():
    filling = [(t * 60.0, 2500.0 + 30 * t) for t in range(60)]  # RSS toward -Xmx
    steady = [(t * 300.0, 400.0 + (t % 2) * 20) for t in range(12)]
    leaking = [(t * 300.0, 400.0 + 100 * t) for t in range(12)]
    text = report(
        60,
        2000,
        SoakReadings(
            rss={"spark-service": filling},
            runs={"SUCCESS": 1},
            heap={"spark-service": steady, "ingest": leaking},
        ),
    )
    # RSS toward -Xmx says nothing of a JVM: the live heap judges it
    assert text.split("| spark-service |")[1].split("\n")[0].endswith("by live heap |")
    heap_rows = text.split("judges a JVM, unless it is read at rest (below):")[1]
    assert heap_rows.split("| spark-service |")[1].split("\n")[0].endswith("yes |")
    assert heap_rows.split("| ingest |")[1].split("\n")[0].endswith("**no** |")
    assert "Live heap" not in report(60, 2000, SoakReadings(runs={"SUCCESS": 1}))


def test_a_jvm_is_judged_by_the_floor_of_its_live_heap_not_by_runs_in_flight():
    """Most readings of the last sixth caught runs' data in flight (its median jumps); the
    floor stays: flat. A floor that rises is a leak, whatever the medians do."""
    in_flight = [(t * 120.0, 400.0) for t in range(30)]
    in_flight += [(3000.0 + t * 60.0 + 30, 900.0) for t in range(9)]
    rising_floor = [(t * 120.0, 400.0 + 10 * t) for t in range(30)]
    text = report(
        60,
        2000,
        SoakReadings(
            runs={"SUCCESS": 1}, heap={"spark-service": in_flight, "ingest": rising_floor}
        ),
    )
    heap_rows = text.split("judges a JVM, unless it is read at rest (below):")[1]
    service = heap_rows.split("| spark-service |")[1].split("\n")[0]
    assert service.endswith("yes |") and "400 / 900" in service, service
    assert heap_rows.split("| ingest |")[1].split("\n")[0].endswith("**no** |")


def test_failed_runs_name_the_job_and_the_steps_error(tmp_path: Path):
    import dagster as dg

    from freshness_pipeline.lab.reliability.soak import failed_runs

    @dg.op
    def fails_with_metadata() -> None:
        raise dg.Failure(
            description="clustering of trade_raw failed: short",
            metadata={
                "error": dg.MetadataValue.text("java.util.concurrent.CancellationException\n  at X")
            },
        )

    @dg.op
    def raises() -> None:
        raise ValueError("plain error")

    @dg.op
    def succeeds() -> None:
        pass

    home = tmp_path / "home"
    home.mkdir()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for name, step in (
            ("ok_job", succeeds),
            ("cluster_trade_raw", fails_with_metadata),
            ("trade_aggr_job", raises),
        ):
            job = dg.GraphDefinition(name=name, node_defs=[step]).to_job()
            job.execute_in_process(instance=instance, raise_on_error=False)
    lines = failed_runs(home)
    assert len(lines) == 2  # the successful run is not listed
    by_job = {line.split(" ")[0]: line for line in lines}
    assert "java.util.concurrent.CancellationException at X" in by_job["cluster_trade_raw"]
    assert "FAILURE" in by_job["cluster_trade_raw"]
    assert "plain error" in by_job["trade_aggr_job"]
    text = report(60, 2000, SoakReadings(runs={"SUCCESS": 1, "FAILURE": 2}, failures=lines))
    assert "What failed" in text and "- `cluster_trade_raw " in text


def test_tick_and_run_times_compare_the_first_and_last_ten_minutes():
    from freshness_pipeline.lab.reliability.soak import EdgeTimes, _edges, timing_lines

    # ticks every 10 s over an hour, slower toward the end (a growing table)
    ticks = [(t, 0.1 + t / 3600) for t in range(0, 3600, 10)]
    edges = _edges(ticks, 600)
    assert edges.first_count == 60 and edges.last_count == 60
    assert round(edges.first, 3) == round(0.1 + 295 / 3600, 3)
    assert round(edges.last, 3) == round(0.1 + 3295 / 3600, 3)  # ticks 3000-3590 s
    assert _edges([], 600) == EdgeTimes(None, None, 0, 0)
    lines = timing_lines({"tick": edges, "run": EdgeTimes(12.0, None, 3, 0)})
    assert lines[2].startswith("| freshness sensor tick") and "(60) |" in lines[2]
    assert lines[3].endswith("| 12.00 s (3) | - |")
    text = report(60, 2000, SoakReadings(runs={"SUCCESS": 1}, timings={"tick": edges}))
    assert "| median (count) | first 10 minutes | last 10 minutes |" in text


def test_run_times_come_from_the_six_jobs_successful_runs(tmp_path: Path):
    import dagster as dg

    from freshness_pipeline.lab.reliability.soak import tick_and_run_times
    from freshness_pipeline.scheduling.run_plan import ASSET_TAG

    @dg.op
    def work() -> None:
        pass

    home = tmp_path / "home"
    home.mkdir()
    job = dg.GraphDefinition(name="trade_aggr_job", node_defs=[work]).to_job()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        job.execute_in_process(instance=instance, tags={ASSET_TAG: "trade_aggr"})
        job.execute_in_process(instance=instance)  # not a sensor run of the six: left out
    times = tick_and_run_times(home)
    assert times["run"].first_count == 1 and times["run"].first is not None
    assert times["tick"].first is None  # no sensor ticked here


def test_report_names_what_grew_in_a_jvm():
    from freshness_pipeline.lab.bench.memory import ClassGrowth

    grew = ClassGrowth("org.example.Session", 2.0, 250.0, 10, 100)
    text = report(
        60,
        2000,
        SoakReadings(runs={"SUCCESS": 1}, growth={"spark-service": (10.2, 60.1, [grew])}),
    )
    section = text.split("What grew in spark-service's live heap from minute 10 to minute 60")[1]
    assert "| `org.example.Session` | 2.0 | 250.0 | 10 | 100 |" in section
    nothing = report(
        60, 2000, SoakReadings(runs={"SUCCESS": 1}, growth={"spark-service": (10, 60, [])})
    )
    assert "(nothing grew)" in nothing


def test_a_rest_reading_pauses_launches_until_nothing_is_in_flight():
    """The daemon's process group is stopped while runs in flight end, the JVM read at rest,
    and the daemon resumed (also when the reading fails)."""
    import subprocess

    import pytest

    from freshness_pipeline.lab.reliability.soak import rest_reading

    daemon = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        states: list[str] = []

        def state() -> str:
            return Path(f"/proc/{daemon.pid}/stat").read_text().split(") ")[1][0]

        left = iter([2, 1, 0])

        def in_flight() -> int:
            states.append(state())
            return next(left)

        reading = rest_reading(
            daemon.pid,
            {"spark-service": 11},
            in_flight,
            15.0,
            read_live=lambda pid: 300.0 + pid,
            at_rest=lambda: states.append(state()),
            poll_s=0.01,
        )
        assert states == ["T", "T", "T", "T"]  # stopped throughout
        assert state() != "T"  # and running again
        assert reading.live_mib == {"spark-service": 311.0} and reading.in_flight == 0

        stuck = rest_reading(
            daemon.pid,
            {"spark-service": 11},
            lambda: 3,
            30.0,
            read_live=lambda pid: 500.0,
            wait_s=0.05,
            poll_s=0.01,
        )
        assert stuck.in_flight == 3 and state() != "T"

        def broken() -> None:
            raise RuntimeError("jcmd failed")

        with pytest.raises(RuntimeError):
            rest_reading(daemon.pid, {}, lambda: 0, 45.0, at_rest=broken)
        assert state() != "T"
    finally:
        daemon.kill()
        daemon.wait()


def test_the_jvm_that_runs_the_jobs_is_judged_at_rest():
    """Under load its floor rose with the runs in flight; at rest it is flat, and that is
    its verdict. A heap at rest that rises is a leak."""
    from freshness_pipeline.lab.reliability.soak import RestReading

    rising_floor = [(t * 120.0, 400.0 + 10 * t) for t in range(30)]
    flat = [RestReading(m, {"spark-service": v}, 40.0, 0) for m, v in ((15, 300), (60, 320))]
    text = report(
        60,
        2000,
        SoakReadings(runs={"SUCCESS": 1}, heap={"spark-service": rising_floor}, rest=flat),
    )
    under_load = text.split("unless it is read at rest (below):")[1].split("at rest**")[0]
    assert under_load.split("| spark-service |")[1].split("\n")[0].endswith("judged at rest |")
    at_rest = text.split("at rest**")[1]
    row = at_rest.split("| spark-service |")[1].split("\n")[0]
    assert row == " 300 | 320 | yes |" and "minute 15 (40 s)" in at_rest
    leaking = [
        RestReading(15, {"spark-service": 300}, 40.0, 0),
        RestReading(60, {"spark-service": 400}, 250.0, 2),
    ]
    text = report(60, 2000, SoakReadings(runs={"SUCCESS": 1}, rest=leaking))
    assert text.split("| spark-service |")[-1].split("\n")[0].endswith("**no** |")
    assert "minute 60 (2 runs)" in text


@pytest.mark.spark
def test_a_short_soak_runs_the_stack_and_writes_its_report(tmp_path: Path, monkeypatch):
    """`make soak`'s own code, for 18 s: the stack up, sampled, drained, and the
    report section written with every table and the runs' verdict."""
    import sys

    from freshness_pipeline.lab.reliability.report_sections import write_section
    from freshness_pipeline.runtime.ports import free_port

    report_file = tmp_path / "RELIABILITY.md"
    write_section(report_file, "soak", "placeholder\n")
    env = {
        **os.environ,
        "TMPDIR": str(tmp_path),
        "FRESHNESS_SPARK_SERVICE_PORT": str(free_port()),
        "FRESHNESS_SPARK_SERVICE_MEMORY": "2g",
    }
    argv = ["--minutes", "0.3", "--rate", "300", "--interval", "5", "--gc-every", "2"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "freshness_pipeline.cli",
            "lab",
            "soak",
            *argv,
            "--rest-every",
            "0",
        ]
        + ["--report", str(report_file)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    text = report_file.read_text()
    assert "## Soak" in text and "placeholder" not in text
    assert "| spark-service |" in text and "| ingest |" in text
    assert "| price_raw |" in text and "| trade_raw |" in text
    assert "a soak has no failed run" in text
    assert [p.name for p in tmp_path.glob("soak_*")], "the soak's folder is kept"
