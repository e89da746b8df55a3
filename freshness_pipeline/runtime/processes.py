"""Stopping a child process and everything it started, by the process id we started."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import subprocess
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Self


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


def group_states(pgid: int) -> dict[int, str]:
    """pid -> state letter (R, S, D, T, Z, ...) of every process in process group `pgid`."""
    states = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                # the fields after the parenthesised command name: state, ppid, pgrp, ...
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[2]) == pgid:
                    states[int(entry.name)] = fields[0]
    return states


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in (Path("/proc") / str(pid) / "fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    return inodes


def _hex_address(text: str) -> tuple[str, int]:
    host, port = text.split(":")
    raw = bytes.fromhex(host)
    # /proc/net/tcp* prints the address as host-order 32-bit words
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    ip = ipaddress.ip_address(words)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # a JVM's IPv4 socket shows as ::ffff:a.b.c.d
    return str(ip), int(port, 16)


def listening_addresses(pgid: int) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket a process group listens on (Linux /proc): how a
    test proves a server we start binds 127.0.0.1 only."""
    inodes = set().union(*(_socket_inodes(pid) for pid in group_states(pgid)))
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                    found.add(_hex_address(fields[1]))
    return found


def is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


class ServerProcess(ABC):
    """A server this project starts as one child process in its own process group and
    stops by that process id: `stop`, the context manager and `pid` for every such server
    (the Spark service, the Kafka broker, the object store, Postgres). A subclass starts
    `self.process` in `start()` and may change `stop_signal`."""

    process: subprocess.Popen | None = None
    stop_signal: int = signal.SIGTERM  # a JVM's shutdown hooks run on SIGTERM

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def listening(self) -> set[tuple[str, int]]:
        """Every (address, port) the server's process group listens on."""
        return listening_addresses(self.pid) if self.pid else set()

    @abstractmethod
    def start(self, timeout_s: float = 60.0) -> Self:
        """Starts `self.process` and returns self once the server answers (each server
        has its own default wait)."""

    def running(self) -> bool:
        """Whether the process we started is still alive."""
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout_s: float = 30.0) -> None:
        """`stop_signal` to the process we started, then SIGTERM and SIGKILL to its group
        if it hangs."""
        proc = self.process
        if proc is None or proc.poll() is not None:
            return
        stop_process_group(proc, self.stop_signal, timeout_s)

    def __enter__(self) -> Self:
        return self.start() if self.process is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()
