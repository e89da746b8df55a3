"""Free ports: never the same one twice, never one the caller must avoid."""

from __future__ import annotations

import socket

import pytest

from freshness_pipeline.runtime import ports


class _KernelRepeating:
    """A socket whose bind(0) gets ports from a fixed list, as a kernel may give one free
    port to two calls a moment apart."""

    given: list[int] = []

    def __init__(self, *_args: object) -> None:
        self._port = 0

    def __enter__(self) -> _KernelRepeating:
        return self

    def __exit__(self, *_exc: object) -> None:
        return None

    def bind(self, _address: tuple[str, int]) -> None:
        self._port = self.given.pop(0)

    def getsockname(self) -> tuple[str, int]:
        return ("127.0.0.1", self._port)


@pytest.fixture
def kernel(monkeypatch: pytest.MonkeyPatch) -> type[_KernelRepeating]:
    monkeypatch.setattr(ports.socket, "socket", _KernelRepeating)
    monkeypatch.setattr(ports, "_HANDED_OUT", set())
    return _KernelRepeating


def test_a_port_the_kernel_repeats_is_not_handed_out_twice(kernel) -> None:
    kernel.given = [41000, 41000, 41000, 41001]
    assert ports.free_port() == 41000
    assert ports.free_port() == 41001


def test_a_port_to_avoid_is_skipped(kernel) -> None:
    kernel.given = [41002, 41003]
    assert ports.free_port(avoid={41002}) == 41003


def test_no_free_port_says_so(kernel) -> None:
    kernel.given = [41004] * 100
    assert ports.free_port() == 41004
    with pytest.raises(OSError, match="no free TCP port"):
        ports.free_port()


def test_a_real_free_port_can_be_listened_on() -> None:
    port = ports.free_port()
    assert not ports.port_is_open("127.0.0.1", port)
    with socket.socket() as server:
        server.bind(("127.0.0.1", port))
        server.listen()
        assert ports.port_is_open("127.0.0.1", port)
