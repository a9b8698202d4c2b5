"""Runs aiohttp applications on their endpoints in one background event-loop thread, so
the synchronous service can start and stop them.

A host holds its connections to bounds: one that sends no request for ``idle_timeout``
seconds is closed (aiohttp's keep-alive timer starts at connect and restarts after each
answer, so it also bounds how long headers may take), and past ``max_connections`` open
ones a new connection is answered 503 and closed at once, counted, so idle sockets
cannot use up the file descriptors that gRPC and the health endpoints need. The service
runs its receivers and its metrics/health endpoints on separate hosts, so neither a
large request nor a large scrape holds up the other's event loop.
"""
from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from faultgate_stream.receive import log_throttle
from faultgate_stream.receive.config import DEFAULT_HTTP_IDLE_TIMEOUT, DEFAULT_HTTP_MAX_CONNECTIONS

_TOO_MANY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nRetry-After: 1\r\n"
             b"Connection: close\r\nContent-Length: 21\r\n\r\ntoo many connections\n")

# asyncio's default; a TLS client that has not finished its handshake by then is dropped
_HANDSHAKE_TIMEOUT = 60.0


@dataclass(frozen=True)
class ConnectionLimits:
    idle_timeout: float = DEFAULT_HTTP_IDLE_TIMEOUT
    max_connections: int = DEFAULT_HTTP_MAX_CONNECTIONS


class _Refuse(asyncio.Protocol):
    """A connection past the limit: told so, and closed."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.write(_TOO_MANY)  # type: ignore[attr-defined]
        transport.close()


class _Counted(asyncio.Protocol):
    """An aiohttp connection, counted in ``open_now`` until it closes (or never opens)."""

    __slots__ = ("_inner", "_open_now", "_counted")

    def __init__(self, inner: asyncio.Protocol, open_now: list[int]) -> None:
        self._inner = inner
        self._open_now = open_now
        self._counted = True

    def _release(self) -> None:
        if self._counted:
            self._counted = False
            self._open_now[0] -= 1

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._release()
        self._inner.connection_lost(exc)

    def __del__(self) -> None:
        # a TLS handshake that failed never reaches connection_made nor connection_lost
        self._release()


class HttpHost:
    def __init__(self, name: str = "http", limits: ConnectionLimits = ConnectionLimits(),
                 on_refused: Callable[[str], None] = lambda site: None) -> None:
        self._sites: list[tuple[str, web.Application, str, Any, bool]] = []
        self._limits = limits
        self._on_refused = on_refused
        self._loop = asyncio.new_event_loop()
        self._runners: list[web.AppRunner] = []
        self._servers: list[asyncio.AbstractServer] = []
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self.ports: dict[str, int] = {}
        log_throttle.install()

    def add(self, name: str, application: web.Application, endpoint: str, ssl_context: Any = None,
            raw_body: bool = False) -> None:
        """``raw_body``: aiohttp leaves ``Content-Encoding`` to the application."""
        self._sites.append((name, application, endpoint, ssl_context, raw_body))

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=30)

    async def _start(self) -> None:
        for name, application, endpoint, ssl_context, raw_body in self._sites:
            host, port = endpoint.rsplit(":", 1)
            runner = web.AppRunner(application, access_log=None, keepalive_timeout=self._limits.idle_timeout,
                                   auto_decompress=not raw_body)
            await runner.setup()
            self._runners.append(runner)
            server = await self._loop.create_server(
                self._factory(name, runner), host.strip("[]") or "0.0.0.0", int(port), ssl=ssl_context,
                ssl_handshake_timeout=_HANDSHAKE_TIMEOUT if ssl_context else None, reuse_port=False)
            self._servers.append(server)
            self.ports[name] = server.sockets[0].getsockname()[1] if server.sockets else int(port)

    def _factory(self, name: str, runner: web.AppRunner) -> Callable[[], asyncio.BaseProtocol]:
        server = runner.server
        assert server is not None
        limit = self._limits.max_connections
        # counted from accept to close: asyncio accepts a burst before it tells any
        # protocol, and tells it only after the TLS handshake, so the server's own list
        # of connections would let a burst or slow handshakes past the limit
        open_now = [0]

        def protocol() -> asyncio.BaseProtocol:
            if open_now[0] >= limit:
                self._on_refused(name)
                return _Refuse()
            open_now[0] += 1
            return _Counted(server(), open_now)

        return protocol

    def stop(self) -> None:
        """Safe without ``start`` and twice."""
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _stop(self) -> None:
        for server in self._servers:
            server.close()
        self._servers.clear()
        for runner in reversed(self._runners):
            await runner.cleanup()
        self._runners.clear()
