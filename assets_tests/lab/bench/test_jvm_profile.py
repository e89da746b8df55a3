"""`make profile-service`'s instruments: threads' CPU by kind from /proc (a fake /proc),
and the hottest frames from a real Java Flight Recording of a small Java program."""

from __future__ import annotations

import subprocess
from pathlib import Path

from freshness_pipeline.lab.bench.jvm_profile import (
    delayed_recording,
    execution_samples,
    java_pids,
    recorded_samples,
    report_rows,
    thread_kind,
    thread_ticks,
    ticks_by_kind,
    top_frames,
)


def _thread(proc: Path, pid: int, tid: int, name: str, utime: int, stime: int) -> None:
    task = proc / str(pid) / "task" / str(tid)
    task.mkdir(parents=True, exist_ok=True)
    rest = ["S", "1"] + ["0"] * 9 + [str(utime), str(stime)] + ["0"] * 10
    (task / "stat").write_text(f"{tid} ({name}) " + " ".join(rest) + "\n")


def test_threads_cpu_is_grouped_by_kind_between_two_samples(tmp_path):
    proc = tmp_path / "proc"
    _thread(proc, 7, 8, "C2 CompilerThre", 100, 20)
    _thread(proc, 7, 9, "Executor task l", 50, 0)  # /proc cuts names at 15 characters
    _thread(proc, 7, 10, "G1 Conc#0", 10, 0)
    before = thread_ticks(7, proc)
    assert before == {
        "8 C2 CompilerThre": 120,
        "9 Executor task l": 50,
        "10 G1 Conc#0": 10,
    }
    _thread(proc, 7, 8, "C2 CompilerThre", 300, 20)  # +200 ticks
    _thread(proc, 7, 11, "Executor task l", 100, 100)  # born since
    _thread(proc, 7, 12, "SparkConnectExe", 30, 0)
    after = thread_ticks(7, proc)
    assert ticks_by_kind(before, after, hz=100) == {
        "jit": 2.0,
        "spark tasks": 2.0,
        "gc": 0.0,
        "spark connect": 0.3,
    }
    assert thread_kind("GC Thread#1") == "gc" and thread_kind("main") == "other"


def test_java_processes_are_found_below_a_python_parent(tmp_path):
    proc = tmp_path / "proc"
    for pid, ppid, comm in ((10, 1, "python"), (11, 10, "bash"), (12, 11, "java"), (13, 1, "java")):
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "stat").write_text(f"{pid} ({comm}) S {ppid} 0 0")
        (proc / str(pid) / "comm").write_text(comm + "\n")
    assert java_pids(10, proc) == [12]


BUSY = """public class Busy {
  static double work(int n) {
    double x = 0; for (int i = 0; i < n; i++) x += Math.sqrt(i); return x;
  }
  public static void main(String[] a) {
    long end = System.currentTimeMillis() + 2500; double x = 0;
    while (System.currentTimeMillis() < end) x += work(200000);
    System.out.println(x > 0);
  }
}
"""


def test_the_hottest_frames_of_a_real_flight_recording(tmp_path):
    (tmp_path / "Busy.java").write_text(BUSY)
    recording = tmp_path / "busy.jfr"
    # asked for at start, begun a second later: the way the profile records a warm JVM
    flag = delayed_recording(None, 1) + f",filename={recording}"
    subprocess.run(
        ["java", flag, "Busy.java"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    text = recorded_samples(recording)
    samples = list(execution_samples(text))
    assert samples and all(s.thread for s in samples)
    total, top, _ = top_frames(samples)
    assert total == len(samples)
    # the busy method (or the square root it calls) is where the main thread was
    assert any(m.startswith(("Busy.work", "java.lang.Math.sqrt")) for m, _ in top[:2]), top
    rows = report_rows("Busy", 2.5, {"jit": 0.5, "other": 2.0}, text)
    assert "| other | 2.0 | 80% |" in rows and "| jit | 0.5 | 20% |" in rows
    assert any(r.startswith("| `Busy.work") or r.startswith("| `java.lang.Math") for r in rows)


def test_the_recording_is_asked_for_at_start_and_keeps_the_users_options():
    assert delayed_recording(None, 600) == (
        "-XX:StartFlightRecording=delay=600s,settings=profile,name=freshness"
    )
    assert delayed_recording("-Xmx4g", 0.2).startswith("-Xmx4g -XX:StartFlightRecording=delay=1s,")
