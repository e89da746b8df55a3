"""Where the JVMs' CPU goes (`make profile-service`): the pipeline runs as the demo runs it
(the market stream, the Spark service, ingestion's Spark, Dagster) and, after a warm-up,
through one window, each JVM is watched two ways:

- its threads' CPU from /proc (every thread, the JIT compiler's and the collector's among
  them, which a Java profiler does not sample), grouped by kind of thread;
- a Java Flight Recording (built into Java 17), whose execution samples give the hottest
  frames (the top of each sampled stack, and the first frame of ours, Hudi's, Spark's or
  Parquet's below it). The recording is asked for when the JVMs start and begins after the
  warm-up (`-XX:StartFlightRecording=delay=...`): started later by `jcmd JFR.start`, it
  turns on JVMTI capabilities that make every compiled method not entrant, and the window
  would measure the JIT compiling the whole JVM again (a warm service showed 44 % of its
  CPU in the JIT that way, against 13 % from /proc alone).

It writes PROFILE.md (and the .jfr files, to open in JDK Mission Control) in --out.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from freshness_pipeline.config.settings import Settings
from freshness_pipeline.lab.bench.common import scratch

# A thread's kind, by its name (the first pattern that matches), for the CPU budget. /proc
# gives a thread's name cut to 15 characters ("Executor task l", "C2 CompilerThre").
THREAD_KINDS: tuple[tuple[str, str], ...] = (
    ("jit", r"^C[12] CompilerThre|^CompilerThre|^C1 |^C2 "),
    ("gc", r"^G1 |^GC Thread|^GC |^VM Periodic|^Parallel GC|^G1Conc|^G1Refine|^G1Service"),
    ("vm", r"^VM Thread|^Service Thread|^Monitor Defl|^Signal Dispatch|^Common-Clean"),
    ("spark tasks", r"^Executor task|^executor-heart|^task-result-get"),
    ("spark connect", r"^SparkConnect|^grpc-|^spark-connect"),
    ("spark scheduler", r"^dag-scheduler|^spark-listener|^SparkListenerBu|^dispatcher-"),
    ("jfr", r"^JFR "),
)
PACKAGES = ("io.freshness", "org.apache.hudi", "org.apache.parquet", "org.apache.spark")


def thread_kind(name: str) -> str:
    for kind, pattern in THREAD_KINDS:
        if re.search(pattern, name):
            return kind
    return "other"


def thread_ticks(pid: int, proc: Path = Path("/proc")) -> dict[str, int]:
    """Each live thread's CPU (user + system clock ticks), keyed `<tid> <name>`."""
    found = {}
    for task in (proc / str(pid) / "task").glob("*"):
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue  # a thread that ended while we looked
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        found[f"{task.name} {name}"] = int(fields[11]) + int(fields[12])  # utime, stime
    return found


def ticks_by_kind(before: Mapping[str, int], after: Mapping[str, int], hz: int) -> dict[str, float]:
    """CPU seconds per kind of thread between two samples (a thread born between them
    counts from 0)."""
    spent: dict[str, float] = {}
    for key, ticks in after.items():
        name = key.split(" ", 1)[1]
        kind = thread_kind(name)
        spent[kind] = spent.get(kind, 0.0) + (ticks - before.get(key, 0)) / hz
    return spent


@dataclass(frozen=True)
class Sample:
    thread: str
    frames: tuple[str, ...]  # the top of the stack first, as `jfr print` shows it


def execution_samples(text: Iterable[str]) -> Iterator[Sample]:
    """The jdk.ExecutionSample events of `jfr print --events jdk.ExecutionSample`."""
    thread, in_stack = "", False
    frames: list[str] = []
    for raw in text:
        line = raw.strip()
        if line.startswith("sampledThread = "):
            match = re.match(r'sampledThread = "(.*)" \(', line)
            thread = match.group(1) if match else line
        elif line == "stackTrace = [":
            frames, in_stack = [], True
        elif in_stack and line == "]":
            in_stack = False
            yield Sample(thread, tuple(frames))
        elif in_stack and line != "...":
            frames.append(re.sub(r" line: \d+$", "", line))


def _method(frame: str) -> str:
    return frame.split("(", 1)[0]


def top_frames(
    samples: Iterable[Sample], n: int = 15
) -> tuple[int, list[tuple[str, int]], list[tuple[str, int]]]:
    """(samples, the n hottest top frames, the n hottest first frames of a package of
    PACKAGES): where the sampled threads were, and whose code put them there."""
    total = 0
    top: Counter[str] = Counter()
    ours: Counter[str] = Counter()
    for sample in samples:
        if not sample.frames:
            continue
        total += 1
        top[_method(sample.frames[0])] += 1
        for frame in sample.frames:
            if frame.startswith(PACKAGES):
                ours[_method(frame)] += 1
                break
    return total, top.most_common(n), ours.most_common(n)


def recorded_samples(path: Path) -> list[str]:
    """A recording's execution samples as `jfr print` shows them (execution_samples)."""
    return subprocess.run(
        ["jfr", "print", "--events", "jdk.ExecutionSample", str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()


def jfr_command(pid: int, *args: str) -> list[str]:
    return ["jcmd", str(pid), *args]


RECORDING = "freshness"


def delayed_recording(java_options: str | None, delay_s: float) -> str:
    """The JVM options that ask for a recording `delay_s` after the JVM starts, named so
    `jcmd <pid> JFR.dump name=...` can write it where we choose (one option serves both
    JVMs, and Java 17's `filename` cannot tell them apart)."""
    delay = max(1, round(delay_s))
    flag = f"-XX:StartFlightRecording=delay={delay}s,settings=profile,name={RECORDING}"
    return f"{java_options} {flag}" if java_options else flag


def java_pids(root_pid: int, proc: Path = Path("/proc")) -> list[int]:
    """`root_pid` and its descendants whose command is java (a Python process's own
    Spark JVM is its child)."""
    children: dict[int, list[int]] = {}
    for stat in proc.glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        ppid = int(text[text.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(stat.parent.name))
    found, queue = [], [root_pid]
    while queue:
        pid = queue.pop()
        try:
            if (proc / str(pid) / "comm").read_text().strip() == "java":
                found.append(pid)
        except OSError:
            pass
        queue += children.get(pid, [])
    return found


def report_rows(
    name: str, seconds: float, kinds: Mapping[str, float], jfr_text: Iterable[str]
) -> list[str]:
    """One JVM's part of PROFILE.md: CPU by kind of thread, then the hottest frames."""
    total = sum(kinds.values())
    lines = [
        f"## {name}",
        "",
        f"{total:.1f} CPU-s over {seconds:.0f} s ({total / seconds:.2f} cores).",
        "",
        "| threads | CPU-s | share |",
        "|---|---|---|",
    ]
    for kind, spent in sorted(kinds.items(), key=lambda kv: -kv[1]):
        lines.append(
            f"| {kind} | {spent:.1f} | {spent / total:.0%} |" if total else f"| {kind} | 0 | - |"
        )
    samples, top, ours = top_frames(execution_samples(jfr_text))
    lines += ["", f"Java Flight Recorder: {samples} execution samples.", ""]
    lines += ["| top frame | samples | share |", "|---|---|---|"]
    lines += [f"| `{m}` | {c} | {c / samples:.1%} |" for m, c in top]
    lines += [
        "",
        "| first frame of " + ", ".join(PACKAGES) + " | samples | share |",
        "|---|---|---|",
    ]
    lines += [f"| `{m}` | {c} | {c / samples:.1%} |" for m, c in ours]
    return [*lines, ""]


def main(argv: list[str], base: Settings) -> int:
    parser = argparse.ArgumentParser(
        prog="freshness lab jvm-profile", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--warmup", type=float, default=30.0, help="seconds before watching")
    parser.add_argument("--seconds", type=float, default=300.0, help="the window watched")
    parser.add_argument("--rate", type=float, default=300.0, help="events per second")
    parser.add_argument("--out", type=Path, default=None, help="default: <state>/profile")
    args = parser.parse_args(argv)

    import os

    from freshness_pipeline.runtime.stack import Stack, StackConfig, exit_on_signals
    from freshness_pipeline.stream.generator import StreamConfig

    exit_on_signals()  # Ctrl-C or a kill stops the stack it started

    out = (args.out or base.state_dir / "profile").resolve()
    out.mkdir(parents=True, exist_ok=True)
    root, where = scratch("freshness-profile-")
    env = {
        **where,
        "FRESHNESS_SPARK_JAVA_OPTIONS": delayed_recording(base.spark_java_options, args.warmup),
    }
    config = StackConfig(
        stream=StreamConfig(seed=11, rate=args.rate),
        webserver=False,
        dagster_home=root / "dagster_home",
        logs_dir=root / "logs",
        env=env,
    )
    stack = Stack(config, base).start()
    hz = os.sysconf("SC_CLK_TCK")
    try:
        deadline = time.monotonic() + args.warmup
        while time.monotonic() < deadline:
            stack.supervise()
            time.sleep(1)
        assert stack.service is not None and stack.service.process is not None
        jvms = {
            "Spark service": java_pids(stack.service.process.pid)[0],
            "ingestion's Spark": java_pids(stack.process("ingest").pid)[0],
        }
        files = {"Spark service": "service.jfr", "ingestion's Spark": "ingestion.jfr"}
        before = {name: thread_ticks(pid) for name, pid in jvms.items()}
        began = time.monotonic()
        while time.monotonic() < began + args.seconds:
            stack.supervise()
            time.sleep(1)
        seconds = time.monotonic() - began
        after = {name: thread_ticks(pid) for name, pid in jvms.items()}
        lines = [
            "# Where the JVMs' CPU goes",
            "",
            f"`freshness lab jvm-profile --warmup {args.warmup:g} "
            f"--seconds {args.seconds:g} --rate {args.rate:g}`, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores: "
            "the demo's pipeline (market stream, six jobs, PMB), watched after the warm-up; "
            f"drivers' extra JVM options: {base.spark_java_options or 'none'} "
            "(FRESHNESS_SPARK_JAVA_OPTIONS).",
            "",
        ]
        for name, pid in jvms.items():
            path = out / files[name]
            subprocess.run(
                jfr_command(pid, "JFR.stop", f"name={RECORDING}", f"filename={path}"),
                check=True,
                capture_output=True,
            )
            text = recorded_samples(path)
            lines += report_rows(name, seconds, ticks_by_kind(before[name], after[name], hz), text)
    finally:
        stack.stop()
    (out / "PROFILE.md").write_text("\n".join(lines))
    print("\n".join(lines))
    print(f"written: {out / 'PROFILE.md'}", file=sys.stderr)
    return 0
