"""Where the machine's CPU went through a window, by kind of process (a fake /proc)."""

from __future__ import annotations

from pathlib import Path

from freshness_pipeline.lab.experiment.machine_budget import (
    BudgetSampler,
    budget_rows,
    process_kind,
)

HARNESS = 100


def _process(proc: Path, pid: int, ppid: int, cmd: str, ticks: int, children: int = 0) -> None:
    folder = proc / str(pid)
    folder.mkdir(parents=True, exist_ok=True)
    fields = ["S", str(ppid)] + ["0"] * 9 + [str(ticks), "0", str(children), "0"] + ["0"] * 5
    (folder / "stat").write_text(f"{pid} (x) " + " ".join(fields))
    (folder / "cmdline").write_bytes(cmd.replace(" ", "\0").encode())


def _gone(proc: Path, pid: int) -> None:
    for name in ("stat", "cmdline"):
        (proc / str(pid) / name).unlink()
    (proc / str(pid)).rmdir()


SERVICE = "/usr/bin/java -cp x io.freshness.connect.LoopbackConnectServer"
INGEST_JVM = "/usr/bin/java -cp x org.apache.spark.deploy.SparkSubmit pyspark-shell"
CODE_SERVER = "/v/bin/python /v/bin/dagster code-server start --socket s"
WORKER = "/v/bin/python -c from multiprocessing.forkserver import main"


def test_kinds_by_command_line():
    assert process_kind(SERVICE) == "Spark service"
    assert process_kind(INGEST_JVM) == "Spark (ingestion, a run's own)"
    assert process_kind("/v/bin/python -m freshness_pipeline.cli ingest --x") == "ingestion"
    assert process_kind(CODE_SERVER) == "code server"
    assert process_kind("/v/bin/python /v/bin/dagster-daemon run -w w") == "Dagster daemon"
    assert process_kind(WORKER) == "run workers"
    assert process_kind("/usr/bin/java -cp k kafka.Kafka server.properties") == "Kafka"
    assert process_kind("anything", HARNESS, HARNESS) == "harness"


def test_the_window_counts_each_process_once_and_a_short_workers_cpu_too(tmp_path):
    proc = tmp_path / "proc"
    _process(proc, HARNESS, 1, "/v/bin/python -m freshness_pipeline.cli experiment", 1000)
    _process(proc, 101, HARNESS, SERVICE, 5000)
    _process(proc, 102, HARNESS, CODE_SERVER, 300)
    _process(proc, 7, 1, SERVICE, 999_999)  # not the harness's: left out
    sampler = BudgetSampler(root=HARNESS, every_s=3600, proc=proc, hz=100).start()
    _process(proc, HARNESS, 1, "/v/bin/python -m freshness_pipeline.cli experiment", 1100)
    _process(proc, 101, HARNESS, SERVICE, 9000)  # +40 s
    _process(proc, 103, 102, WORKER, 400)  # a run worker, seen alive at 4 s
    sampler.sample()
    _gone(proc, 103)  # it ended at 5 s of CPU, and a second one was never seen (3 s)
    _process(proc, 102, HARNESS, CODE_SERVER, 350, children=500 + 300)
    spent = sampler.stop()
    assert spent == {
        "Spark service": 40.0,
        # the worker to its last sample (4 s); its last second and the unseen worker's
        # 3 s reach the code server through its reaped children's CPU
        "code server": 0.5 + 4.0,
        "run workers": 4.0,
        "harness": 1.0,
    }


def test_budget_rows_give_each_kinds_share_of_the_machine(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    rows = budget_rows([("pmb", {"Spark service": 300.0, "harness": 6.0}, 300.0)])
    assert rows[0] == "| variant | machine busy | Spark service | harness |"
    assert rows[2] == "| pmb | 51% | 300 (50%) | 6 (1%) |"


def test_a_run_workers_own_spark_is_not_ingestions(tmp_path):
    proc = tmp_path / "proc"
    _process(proc, HARNESS, 1, "/v/bin/python -m freshness_pipeline.cli experiment", 0)
    _process(proc, 110, HARNESS, "/v/bin/python -m freshness_pipeline.cli ingest --x", 0)
    _process(proc, 111, 110, INGEST_JVM, 0)
    sampler = BudgetSampler(root=HARNESS, every_s=3600, proc=proc, hz=100).start()
    # Dagster's default run start: a spawned Python under the code server
    run = "/v/bin/python -c from multiprocessing.spawn import spawn_main; spawn_main()"
    _process(proc, 120, HARNESS, run, 200)
    _process(proc, 121, 120, INGEST_JVM, 900)  # the run's own session (dagster-pyspark)
    _process(proc, 111, 110, INGEST_JVM, 500)
    spent = sampler.stop()
    assert spent == {
        "Spark (a run's own)": 9.0,
        "Spark (ingestion, a run's own)": 5.0,
        "run workers": 2.0,
        "ingestion": 0.0,
        "harness": 0.0,
    }
