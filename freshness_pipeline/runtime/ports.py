"""Local TCP ports for the servers the project starts on 127.0.0.1."""

from __future__ import annotations

import socket
from collections.abc import Collection

# Every port this process has handed out. The kernel may give the same free port to two
# bind(0) calls a moment apart (nothing holds it in between), and two listeners of one
# server on one port refuse to start, so a port is never handed out twice.
_HANDED_OUT: set[int] = set()
_TRIES = 64


def free_port(avoid: Collection[int] = ()) -> int:
    """A TCP port nothing listens on now, never one this process handed out before, nor
    one in `avoid` (ports another process chose for the same server)."""
    for _ in range(_TRIES):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port not in _HANDED_OUT and port not in avoid:
            _HANDED_OUT.add(port)
            return port
    raise OSError(f"no free TCP port on 127.0.0.1 in {_TRIES} tries")


def port_is_open(host: str, port: int, timeout: float = 0.2) -> bool:
    """Whether something accepts connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
