"""OpenTelemetry SDK span dumps -> spans: ``json.loads(span.to_json())`` of each span, as a
list, one span alone, a ``{"spans": [...]}`` wrapper, or what ``ConsoleSpanExporter``
prints (the spans one after another, read by ``containers``).

This is the SDK's own shape, not OTLP: ids are ``0x``-prefixed hex under ``context``
(integers in dumps that serialise the SDK's ``SpanContext`` fields as they are),
``parent_id`` is the parent's span id (or ``parent.span_id``, a parent context),
``attributes`` a plain object, ``status.status_code`` ``UNSET`` / ``OK`` / ``ERROR`` (any
case, ``StatusCode.`` prefix or not) and times ISO-8601 or epoch numbers. Each dict is handed to ``build_span`` as
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

# The field names this format's records carry: how close an unrecognised file came to it.
SIGNATURE = frozenset({"context", "parent_id", "parent", "name", "kind", "start_time", "end_time", "status", "attributes", "events", "links", "resource"})
NEEDS = (("context.trace_id",), ("context.span_id",), ("name",))

STATUS = {"UNSET": 0, "OK": 1, "ERROR": 2}


def _is_span(x: Any) -> bool:
    ctx = x.get("context") if isinstance(x, dict) else None
    return isinstance(ctx, dict) and "trace_id" in ctx and "span_id" in ctx and "name" in x


def _spans(doc: Any) -> list[Any]:
    return [doc] if isinstance(doc, dict) and _is_span(doc) else records(doc, "spans")


def detect(doc: Any) -> bool:
    spans = _spans(doc)
    return bool(spans) and all(_is_span(s) for s in spans)


def read(doc: Any) -> list[SpanRecord]:
    return [_span(s, f"spans[{i}]") for i, s in enumerate(objects(_spans(doc), "spans"))]


def _id(raw: Any, nbytes: int, where: str) -> str:
    if isinstance(raw, int) and not isinstance(raw, bool) and 0 < raw < 1 << (8 * nbytes):
        return f"{raw:0{2 * nbytes}x}"
    h = hex_id(raw.removeprefix("0x"), nbytes) if isinstance(raw, str) else None
    if h is None:
        raise InputError(f"{where}: {raw!r} is not a {2 * nbytes}-digit hex id")
    return h


def _status_message(s: dict[str, Any], code: int) -> str:
    """The status description; for a failure without one, the recorded exception's message, so
    that a failed tool's result says what went wrong (and, failing that, just ``error``)."""
    st = s.get("status") if isinstance(s.get("status"), dict) else {}
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


def is_span(x: Any) -> bool:
    """An SDK span object: ``context.trace_id`` / ``span_id`` and a name."""
    return _is_span(x)


def span(s: dict[str, Any], where: str, attrs: dict[str, Any] | None = None) -> SpanRecord:
    """One SDK span object -> record; ``attrs`` replaces its attributes (a dump whose
    attribute names another reader has mapped)."""
    return _span(s, where, attrs)


def _span(s: dict[str, Any], where: str, mapped: dict[str, Any] | None = None) -> SpanRecord:
    if not _is_span(s):
        raise InputError(f"{where}: not an OTel SDK span (no context.trace_id / span_id)")
    ctx = s["context"]
    tid = _id(ctx["trace_id"], TRACE_ID_BYTES, f"{where}.context.trace_id")
    sid = _id(ctx["span_id"], SPAN_ID_BYTES, f"{where}.context.span_id")
    parent_ctx = s.get("parent") if isinstance(s.get("parent"), dict) else {}
    if s.get("parent_id"):
        parent = _id(s["parent_id"], SPAN_ID_BYTES, f"{where}.parent_id")
    elif parent_ctx.get("span_id"):
        parent = _id(parent_ctx["span_id"], SPAN_ID_BYTES, f"{where}.parent.span_id")
    else:
        parent = None
    attrs = mapped if mapped is not None else s.get("attributes") or {}
    if not isinstance(attrs, dict):
        raise InputError(f"{where}.attributes: expected an object")
    st = s.get("status") if isinstance(s.get("status"), dict) else {}
    raw_code = str(st.get("status_code") or "UNSET").removeprefix("StatusCode.").upper()
    if raw_code not in STATUS:
        raise InputError(f"{where}.status.status_code: {raw_code!r} is not UNSET, OK or ERROR")
    code = STATUS[raw_code]
    try:
        start, end = to_ns(s.get("start_time")), to_ns(s.get("end_time"))
    except ValueError as e:
        raise InputError(f"{where}.start_time/end_time: {e}") from None
    return build_span(tid, sid, parent, str(s["name"]), start, end, code, _status_message(s, code), dict(attrs))
