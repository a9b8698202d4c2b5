"""OpenTelemetry JS spans written as JSON -> spans: a list of ``ReadableSpan`` objects
(@opentelemetry/sdk-trace-base), in either of the two shapes people write them:

- the ``ReadableSpan`` interface field by field: ``spanContext`` (``{traceId, spanId}``,
  the value of the method), ``parentSpanContext`` (``parentSpanId`` in SDK 1.x),
  ``startTime`` / ``endTime`` / ``duration`` as ``[seconds, nanoseconds]``;
- the ``ConsoleSpanExporter``'s record: ``traceId``, ``id``, ``parentSpanContext`` (or
  ``parentId``), ``timestamp`` and ``duration`` in microseconds.

Both carry ``attributes`` as a plain object and ``status`` as ``{code: 0|1|2, message}``;
attributes go to ``build_span`` as they are, so any convention in them reads as in OTLP.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.read.conventions import build_span
from faultgate_stream.read.formats.shared import objects, records
from faultgate_stream.read.ids import SPAN_ID_BYTES, TRACE_ID_BYTES, hex_id

SIGNATURE = frozenset({"spanContext", "parentSpanContext", "startTime", "endTime", "traceId", "id", "timestamp",
                       "duration", "instrumentationScope", "attributes", "status", "name", "kind"})
NEEDS = (("name",),
         ("spanContext.traceId", "_spanContext.traceId", "traceId"),
         ("spanContext.spanId", "_spanContext.spanId", "id", "spanId"),
         ("startTime", "timestamp"))


def _context(x: dict[str, Any]) -> tuple[Any, Any]:
    ctx = x.get("spanContext") if isinstance(x.get("spanContext"), dict) else x.get("_spanContext")
    if isinstance(ctx, dict):
        return ctx.get("traceId"), ctx.get("spanId")
    return x.get("traceId"), x.get("id", x.get("spanId"))


def _is_span(x: Any) -> bool:
    if not isinstance(x, dict) or "name" not in x:
        return False
    tid, sid = _context(x)
    return isinstance(tid, str) and isinstance(sid, str) and ("startTime" in x or "timestamp" in x)


def detect(doc: Any) -> bool:
    spans = records(doc, "spans")
    return bool(spans) and all(_is_span(s) for s in spans)


def read(doc: Any) -> list[SpanRecord]:
    return [_span(s, f"spans[{i}]") for i, s in enumerate(objects(records(doc, "spans"), "spans"))]


def _hrtime(v: Any, where: str) -> int:
    """An ``HrTime`` ``[seconds, nanoseconds]`` as nanoseconds."""
    if (isinstance(v, list) and len(v) == 2 and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)):
        return int(v[0]) * 1_000_000_000 + int(v[1])
    raise InputError(f"{where}: {v!r} is not an [seconds, nanoseconds] time")


def _micros(v: Any, where: str) -> int:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return int(round(v * 1000))
    raise InputError(f"{where}: {v!r} is not a number of microseconds")


def _id(raw: Any, nbytes: int, where: str) -> str:
    h = hex_id(raw, nbytes) if isinstance(raw, str) else None
    if h is None:
        raise InputError(f"{where}: {raw!r} is not a {2 * nbytes}-digit hex id")
    return h


def _span(s: dict[str, Any], where: str) -> SpanRecord:
    if not _is_span(s):
        raise InputError(f"{where}: not an OTel JS span (no spanContext.traceId / spanId or traceId / id)")
    raw_tid, raw_sid = _context(s)
    tid = _id(raw_tid, TRACE_ID_BYTES, f"{where}.traceId")
    sid = _id(raw_sid, SPAN_ID_BYTES, f"{where}.spanId")
    parent_ctx = s.get("parentSpanContext") if isinstance(s.get("parentSpanContext"), dict) else {}
    raw_parent = parent_ctx.get("spanId") or s.get("parentSpanId") or s.get("parentId")
    parent = _id(raw_parent, SPAN_ID_BYTES, f"{where}.parentSpanContext.spanId") if raw_parent else None
    if "startTime" in s:
        start = _hrtime(s["startTime"], f"{where}.startTime")
        if s.get("endTime") is not None:
            end = _hrtime(s["endTime"], f"{where}.endTime")
        else:
            end = start + (_hrtime(s["duration"], f"{where}.duration") if s.get("duration") is not None else 0)
    else:
        start = _micros(s["timestamp"], f"{where}.timestamp")
        end = start + (_micros(s["duration"], f"{where}.duration") if s.get("duration") is not None else 0)
    attrs = s.get("attributes") or {}
    if not isinstance(attrs, dict):
        raise InputError(f"{where}.attributes: expected an object")
    st = s.get("status") if isinstance(s.get("status"), dict) else {}
    code = st.get("code", 0)
    if code not in (0, 1, 2):
        raise InputError(f"{where}.status.code: {code!r} is not 0, 1 or 2")
    return build_span(tid, sid, parent, str(s["name"]), start, end, int(code), str(st.get("message") or ""), dict(attrs))
