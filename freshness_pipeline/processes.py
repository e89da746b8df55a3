"""Stopping a child process and everything it started, by the process id we started."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess


def stop_process_group(
    proc: subprocess.Popen, first: int = signal.SIGINT, grace_s: float = 30.0
) -> None:
    """`first` to the child (SIGINT: a clean stop; SIGTERM for a JVM's shutdown hooks),
    then SIGTERM and at last SIGKILL to its whole process group if it hangs. Children are
    started with `start_new_session`, so the group id is the pid we started."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        if first == signal.SIGINT:
            proc.send_signal(first)
        else:
            os.killpg(proc.pid, first)
    for escalate, wait_s in ((None, grace_s), (signal.SIGTERM, 10.0), (signal.SIGKILL, None)):
        if escalate is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, escalate)
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


class ServerProcess:
    """A server this project starts as one child process in its own process group and
    stops by that process id: `stop`, the context manager and `pid` for every such server
    (the Spark service, the Kafka broker, the object store, Postgres). A subclass starts
    `self.process` in `start()` and may change `stop_signal`."""

    process: subprocess.Popen | None = None
    stop_signal: int = signal.SIGTERM  # a JVM's shutdown hooks run on SIGTERM

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def start(self, timeout_s: float):  # pragma: no cover - every subclass has its own
        raise NotImplementedError

    def stop(self, timeout_s: float = 30.0) -> None:
        """`stop_signal` to the process we started, then SIGTERM and SIGKILL to its group
        if it hangs."""
        proc = self.process
        if proc is None or proc.poll() is not None:
            return
        stop_process_group(proc, self.stop_signal, timeout_s)

    def __enter__(self):
        return self.start() if self.process is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()
