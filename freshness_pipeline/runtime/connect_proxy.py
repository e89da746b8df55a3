"""The way into the Spark service from other hosts: a TLS proxy that admits only clients
holding a certificate the firm's CA signed.

Spark Connect 3.5 has no authentication of its own: whoever reaches its port runs code with
the service's rights (and reads and writes every table). So the Connect server binds
loopback (FRESHNESS_SPARK_SERVICE_BIND, refused otherwise unless declared open), and runs
on other hosts reach it through this proxy: TLS with the server's certificate, a client
certificate required and verified against the CA (mutual TLS), then the bytes go on to the
loopback port unchanged (gRPC's HTTP/2, agreed through ALPN). A run points
FRESHNESS_SPARK_REMOTE at `sc://proxy-host:port/;use_ssl=true` with its certificate and
key (FRESHNESS_SPARK_REMOTE_CERT, _KEY) and the CA (FRESHNESS_SPARK_REMOTE_CA).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)
CHUNK = 256 * 1024


@dataclass(frozen=True)
class ProxyConfig:
    listen_host: str
    listen_port: int
    target_port: int  # the Connect server's port on 127.0.0.1
    cert: Path  # the proxy's certificate chain (PEM)
    key: Path  # its private key (PEM)
    client_ca: Path  # the CA a client's certificate must chain to
    target_host: str = "127.0.0.1"


def server_context(config: ProxyConfig) -> ssl.SSLContext:
    """TLS 1.2+, the proxy's certificate, a client certificate required, HTTP/2 offered."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(config.cert, config.key)
    context.load_verify_locations(config.client_ca)
    context.verify_mode = ssl.CERT_REQUIRED
    context.set_alpn_protocols(["h2"])  # gRPC insists on it
    return context


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


class ConnectProxy:
    """The proxy on its own thread and event loop; `start` returns once it listens."""

    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        self.served = 0  # connections let through to the service
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peercert")
        if not peer:  # the handshake demands one; never forward without it
            writer.close()
            return
        try:
            target_reader, target_writer = await asyncio.open_connection(
                self.config.target_host, self.config.target_port
            )
        except OSError as exc:
            log.warning(
                "Spark service at %s:%s unreachable: %s",
                self.config.target_host,
                self.config.target_port,
                exc,
            )
            writer.close()
            return
        self.served += 1
        await asyncio.gather(_pump(reader, target_writer), _pump(target_reader, writer))

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._server = loop.run_until_complete(
                asyncio.start_server(
                    self._handle,
                    self.config.listen_host,
                    self.config.listen_port,
                    ssl=server_context(self.config),
                )
            )
        except BaseException as exc:  # surfaced by start()
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        loop.run_forever()
        self._server.close()
        loop.run_until_complete(self._server.wait_closed())
        loop.close()

    def start(self, timeout_s: float = 10.0) -> ConnectProxy:
        self._thread = threading.Thread(target=self._run, name="connect-proxy", daemon=True)
        self._thread.start()
        self._ready.wait(timeout_s)
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        if self._loop is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> ConnectProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
