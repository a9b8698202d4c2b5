"""The verdict API, read-only, on the metrics endpoint (its TLS and bearer token):

``GET /api/v1/verdicts``
    Recent verdicts, newest first. Filters, all optional: ``agent`` (the agent name as the
    API shows it, masked), ``verdict`` (clean / failed / undecided), ``check`` (runs on
    which that check fired), ``since`` (an RFC 3339 time, Unix seconds, or a duration such
    as ``15m``: that long ago) and ``limit`` (default and at most ``MAX_PAGE``).
``GET /api/v1/runs/{trace_id}``
    The verdicts of a trace's runs (a trace can hold several), or 404 when none is kept.
``GET /api/v1/gate``
    The live gate per agent and version: verdict, clean rate, band, thresholds, p-value,
    runs in the window; ``configured: false`` when no bands are set.

Every answer is JSON. A parameter that can never be right (an unknown name, a verdict that
is not one, a ``since`` that is no time) is a 400 naming it. Every reason and agent name
was masked before the ring kept it (``record.py``); the gate's agent names are masked here.
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from aiohttp import web

from faultgate_stream.export.query.config import DEFAULT_MAX_PAGE
from faultgate_stream.export.query.record import Redact
from faultgate_stream.export.query.ring import VerdictRing
from faultgate_stream.model.verdict import VERDICTS

PREFIX = "/api/v1"
MAX_PAGE = DEFAULT_MAX_PAGE
PARAMETERS = ("agent", "verdict", "check", "since", "limit")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d)$")
_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
# OTLP trace ids are 32 hex digits; other ids are refused before any lookup, so a path
# cannot make the ring compare against something huge.
_TRACE_ID = re.compile(r"^[0-9a-fA-F]{1,64}$")


class BadRequest(ValueError):
    """A request that can never succeed as sent: 400, naming the parameter."""


def since_ns(text: str, now_ns: int) -> int:
    """``since`` as a time in ns: RFC 3339, Unix seconds, or a duration back from now."""
    m = _DURATION.match(text)
    if m:
        return now_ns - int(float(m.group(1)) * _UNITS[m.group(2)] * 1e9)
    try:
        return int(float(text) * 1e9)
    except ValueError:
        pass
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise BadRequest(f"since: must be an RFC 3339 time, Unix seconds or a duration like 15m, not {text!r}") from None
    if t.tzinfo is None:
        raise BadRequest(f"since: {text!r} has no time zone (add Z or an offset)")
    return int(t.timestamp() * 1e9)


def verdict_filter(query: dict[str, str], now_ns: int) -> tuple[Callable[[dict[str, Any]], bool], int]:
    """The records a query keeps, and its limit. Raises ``BadRequest``."""
    unknown = sorted(set(query) - set(PARAMETERS))
    if unknown:
        raise BadRequest(f"{unknown[0]}: unknown parameter; known: {', '.join(PARAMETERS)}")
    agent, verdict, check = query.get("agent"), query.get("verdict"), query.get("check")
    if verdict is not None and verdict not in VERDICTS:
        raise BadRequest(f"verdict: must be one of {', '.join(VERDICTS)}, not {verdict!r}")
    since = since_ns(query["since"], now_ns) if "since" in query else None
    try:
        limit = int(query.get("limit", MAX_PAGE))
    except ValueError:
        raise BadRequest(f"limit: must be a whole number, not {query['limit']!r}") from None
    if not 1 <= limit <= MAX_PAGE:
        raise BadRequest(f"limit: must be between 1 and {MAX_PAGE}, not {limit}")

    def keep(r: dict[str, Any]) -> bool:
        return ((agent is None or r["agent"] == agent) and (verdict is None or r["verdict"] == verdict)
                and (check is None or any(f["check"] == check for f in r["fired"]))
                and (since is None or r["decided_time_unix_nano"] >= since))

    return keep, limit


def routes(ring: VerdictRing, gate: Callable[[], list[dict[str, Any]]] | None, redact: Redact,
           now_ns: Callable[[], int] = time.time_ns) -> list[web.RouteDef]:
    def bad(e: BadRequest) -> web.Response:
        return web.json_response({"error": str(e)}, status=400)

    def ring_state() -> dict[str, Any]:
        return {"verdicts": len(ring), "max_verdicts": ring.max_verdicts, "evicted": dict(ring.evicted)}

    async def verdicts(request: web.Request) -> web.Response:
        try:
            keep, limit = verdict_filter(dict(request.query), now_ns())
        except BadRequest as e:
            return bad(e)
        found, matched = ring.newest(keep, limit)
        return web.json_response({"verdicts": found, "matched": matched, "returned": len(found), "ring": ring_state()})

    async def run(request: web.Request) -> web.Response:
        trace_id = request.match_info["trace_id"]
        if not _TRACE_ID.match(trace_id):
            return bad(BadRequest(f"trace_id: must be hex digits (a trace id), not {trace_id[:80]!r}"))
        found = ring.runs_of(trace_id.lower())
        if not found:
            return web.json_response({"error": f"no verdict kept for trace {trace_id.lower()}: not decided yet, or "
                                               f"older than the {ring.max_verdicts} verdicts the ring keeps",
                                      "ring": ring_state()}, status=404)
        return web.json_response({"trace_id": trace_id.lower(), "runs": found})

    async def gate_status(_: web.Request) -> web.Response:
        windows = gate() if gate is not None else []
        for w in windows:
            w["agent"], w["version"] = redact(w["agent"]), redact(w["version"])
        return web.json_response({"configured": gate is not None, "windows": windows})

    return [web.get(f"{PREFIX}/verdicts", verdicts), web.get(f"{PREFIX}/runs/{{trace_id}}", run),
            web.get(f"{PREFIX}/gate", gate_status)]
