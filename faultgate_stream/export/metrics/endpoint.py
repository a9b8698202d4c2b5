"""``/metrics`` (Prometheus text or OpenMetrics, by the scraper's Accept header; exemplars
only in OpenMetrics), ``/healthz`` (the process is alive) and ``/readyz`` (it accepts
data: false before the receivers start and once shutdown begins).

The service hosts this app on an event loop of its own (``receive/http_host.py``), not
the receivers' one: a probe is answered while a large request is parsed, and a scrape
holds up no ingestion. A bearer token, when set, guards ``/metrics`` only: the probes
carry no data, and the kubelet sends them without one. The verdict API (``/api/v1``,
``export/query``) is served here too, under the same TLS and token."""
from __future__ import annotations

from collections.abc import Callable, Sequence

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from faultgate_stream.receive.security import bearer_middleware

PROBES = frozenset({"/healthz", "/readyz"})


def app(registry: CollectorRegistry, ready: Callable[[], bool], bearer_token: str = "",
        routes: Sequence[web.RouteDef] = ()) -> web.Application:
    """``routes``: more read-only paths served here under the same token (the verdict API)."""
    async def metrics(request: web.Request) -> web.Response:
        encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
        return web.Response(body=encoder(registry), headers={"Content-Type": content_type})

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(_: web.Request) -> web.Response:
        return web.Response(text="ready\n") if ready() else web.Response(status=503, text="not ready\n")

    application = web.Application(middlewares=[bearer_middleware(bearer_token, PROBES)] if bearer_token else [])
    application.router.add_get("/metrics", metrics)
    application.router.add_get("/healthz", healthz)
    application.router.add_get("/readyz", readyz)
    application.add_routes(routes)
    return application
