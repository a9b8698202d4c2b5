"""OpenTelemetry SDK span dumps -> spans: ``json.loads(span.to_json())`` of each span, as a
list (or one span alone).

This is the SDK's own shape, not OTLP: ids are ``0x``-prefixed hex under ``context``,
``parent_id`` is the parent's span id, ``attributes`` a plain object, ``status.status_code``
``UNSET`` / ``OK`` / ``ERROR`` and times ISO-8601. Each dict is handed to ``build_span`` as
it is, so whatever convention the attributes follow (OpenInference, GenAI, OpenLLMetry) is
mapped by ``conventions`` exactly as for OTLP.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.read.conventions import build_span
from faultgate_stream.read.formats.shared import objects, records, to_ns
from faultgate_stream.read.ids import SPAN_ID_BYTES, TRACE_ID_BYTES, hex_id

STATUS = {"UNSET": 0, "OK": 1, "ERROR": 2}


def _is_span(x: Any) -> bool:
    ctx = x.get("context") if isinstance(x, dict) else None
    return isinstance(ctx, dict) and "trace_id" in ctx and "span_id" in ctx and "name" in x


def _spans(doc: Any) -> list[Any]:
    return [doc] if isinstance(doc, dict) and _is_span(doc) else records(doc)


def detect(doc: Any) -> bool:
    spans = _spans(doc)
    return bool(spans) and all(_is_span(s) for s in spans)


def read(doc: Any) -> list[SpanRecord]:
    return [_span(s, f"spans[{i}]") for i, s in enumerate(objects(_spans(doc), "spans"))]


def _id(raw: Any, nbytes: int, where: str) -> str:
    h = hex_id(str(raw).removeprefix("0x"), nbytes) if isinstance(raw, str) else None
    if h is None:
        raise InputError(f"{where}: {raw!r} is not a {2 * nbytes}-digit hex id")
    return h


def _status_message(s: dict[str, Any], code: int) -> str:
    """The status description; for a failure without one, the recorded exception's message, so
    that a failed tool's result says what went wrong (and, failing that, just ``error``)."""
    st = s.get("status") or {}
    if st.get("description"):
        return str(st["description"])
    if code != 2:
        return ""
    for ev in s.get("events") or ():
        attrs = ev.get("attributes") if isinstance(ev, dict) else None
        if isinstance(ev, dict) and ev.get("name") == "exception" and isinstance(attrs, dict):
            msg = attrs.get("exception.message") or attrs.get("exception.type")
            if msg:
                return str(msg)
    return "error"


def _span(s: dict[str, Any], where: str) -> SpanRecord:
    if not _is_span(s):
        raise InputError(f"{where}: not an OTel SDK span (no context.trace_id / span_id)")
    ctx = s["context"]
    tid = _id(ctx["trace_id"], TRACE_ID_BYTES, f"{where}.context.trace_id")
    sid = _id(ctx["span_id"], SPAN_ID_BYTES, f"{where}.context.span_id")
    parent = _id(s["parent_id"], SPAN_ID_BYTES, f"{where}.parent_id") if s.get("parent_id") else None
    attrs = s.get("attributes") or {}
    if not isinstance(attrs, dict):
        raise InputError(f"{where}.attributes: expected an object")
    raw_code = str((s.get("status") or {}).get("status_code") or "UNSET").removeprefix("StatusCode.")
    if raw_code not in STATUS:
        raise InputError(f"{where}.status.status_code: {raw_code!r} is not UNSET, OK or ERROR")
    code = STATUS[raw_code]
    return build_span(tid, sid, parent, str(s["name"]), to_ns(s.get("start_time")), to_ns(s.get("end_time")),
                      code, _status_message(s, code), dict(attrs))
