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
