"""Runs aiohttp applications on their endpoints in one background event-loop thread, so
the synchronous service can start and stop them."""
from __future__ import annotations

import asyncio
import threading
from typing import Any

from aiohttp import web


class HttpHost:
    def __init__(self) -> None:
        self._sites: list[tuple[str, web.Application, str, Any]] = []
        self._loop = asyncio.new_event_loop()
        self._runners: list[web.AppRunner] = []
        self._thread = threading.Thread(target=self._loop.run_forever, name="http", daemon=True)
        self.ports: dict[str, int] = {}

    def add(self, name: str, application: web.Application, endpoint: str, ssl_context: Any = None) -> None:
        self._sites.append((name, application, endpoint, ssl_context))

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=30)

    async def _start(self) -> None:
        for name, application, endpoint, ssl_context in self._sites:
            host, port = endpoint.rsplit(":", 1)
            runner = web.AppRunner(application, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, host.strip("[]") or "0.0.0.0", int(port), ssl_context=ssl_context,
                               reuse_port=False)
            await site.start()
            self._runners.append(runner)
            sock = site._server.sockets[0] if site._server and site._server.sockets else None  # type: ignore[union-attr]
            self.ports[name] = sock.getsockname()[1] if sock else int(port)

    def stop(self) -> None:
        """Safe without ``start`` and twice."""
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _stop(self) -> None:
        for runner in reversed(self._runners):
            await runner.cleanup()
        self._runners.clear()
