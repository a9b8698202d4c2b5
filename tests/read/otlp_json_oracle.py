"""The Python OTLP/JSON reader that native/py/src/read/otlp_json.rs replaced, kept as its oracle
(as tests/read/test_wire.py keeps upb's objects as the protobuf reader's): what it read
and refused, and the messages it gave, are what the compiled reader must give.

It is read/otlp_json.py as it stood before the compiled reader, trimmed to ``read``, its
records built by the Python conventions the compiled ones replaced
(tests/read/conventions_oracle.py).
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.model.run import SERVICE_VERSION
from faultgate_stream.read import content_events, events
from tests.read.parity import add_event_content
from tests.read.conventions_oracle import build_span
from faultgate_stream.read.ids import SPAN_ID_BYTES, TRACE_ID_BYTES, hex_id
# What the compiled reader did not replace (the logs reader's AnyValues, the paths in
# messages) is the package's own, not copied here
from faultgate_stream.read.otlp_json import located_spans as _located_spans, _where, value

FIXED64 = 2**64  # OTLP times are fixed64 nanoseconds: what the protobuf reader can be sent
STATUS_NAMES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}


# Where a span sits: its (resource, scope, span) indexes, or the path already written out.
# Reading keeps the indexes and writes the path only into an error message.
Place = tuple[int, int, int] | str


def _int(v: Any, place: Place, field: str) -> int:
    try:
        return int(v or 0)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an infinite float
        raise InputError(f"{_where(place)}.{field}: {v!r} is not an integer") from None


def _status(raw: Any, place: Place) -> int:
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str):
        if raw in STATUS_NAMES:
            return STATUS_NAMES[raw]
        if raw.isdecimal() and raw.isascii() and len(raw) <= 10:
            return int(raw)
    if raw is None:
        return 0
    raise InputError(f"{_where(place)}.status.code: {raw!r} is not a status code")


def _span(s: Any, place: Place, traces: dict[str, str], parents: dict[str, str], version: Any = None) -> SpanRecord:
    """``span``, with the trace and parent ids already validated in this document: the same
    few repeat on every span of a trace."""
    if not isinstance(s, dict):
        raise InputError(f"{_where(place)}: expected an object")
    raw = str(s.get("traceId", ""))
    tid = traces.get(raw)
    if tid is None:
        tid = hex_id(raw, TRACE_ID_BYTES)
        if tid is None:
            raise InputError(f"{_where(place)}.traceId: {s.get('traceId')!r} is not a 32-digit hex trace id")
        traces[raw] = tid
    sid = hex_id(str(s.get("spanId", "")), SPAN_ID_BYTES)
    if sid is None:
        raise InputError(f"{_where(place)}.spanId: {s.get('spanId')!r} is not a 16-digit hex span id")
    parent = None
    if s.get("parentSpanId"):
        raw = str(s["parentSpanId"])
        parent = parents.get(raw)
        if parent is None:
            parent = hex_id(raw, SPAN_ID_BYTES)
            if parent is None:
                raise InputError(f"{_where(place)}.parentSpanId: {s['parentSpanId']!r} is not a 16-digit hex span id")
            parents[raw] = parent
    attrs: dict[str, Any] = {}
    raw_attrs = s.get("attributes") or []
    if not isinstance(raw_attrs, list):
        raise InputError(f"{_where(place)}.attributes: expected a list of {{key, value}} objects")
    for kv in raw_attrs:
        # The common shapes straight through; anything else takes the checked path, which
        # raises the same error as before or reads the value in full. This and the two
        # timestamps below took read() from 3.4 to 3.1 ms on a 673-span file.
        try:
            k = kv["key"]
            if type(k) is not str:  # a number or null as a key: no reader could look it up
                raise TypeError
            attrs[k] = kv["value"]["stringValue"]
        except (TypeError, KeyError):
            if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
                raise InputError(f"{_where(place)}.attributes: expected {{key, value}} objects") from None
            try:
                attrs[kv["key"]] = value(kv.get("value"))
            except InputError as e:
                raise InputError(f"{_where(place)}.attributes[{kv['key']!r}]: {e}") from None
    if version and (parent is None or attrs.get("gen_ai.operation.name") == "invoke_agent"):
        attrs.setdefault(SERVICE_VERSION, version)
    if s.get("events"):
        evaluations = events.from_json(s["events"], value)
        if evaluations:
            attrs[events.EVALUATIONS] = evaluations
        if isinstance(s["events"], list):
            add_event_content(str(s.get("name", "")), attrs, [
                (e["name"], {kv["key"]: value(kv.get("value")) for kv in e["attributes"]
                             if isinstance(kv, dict) and isinstance(kv.get("key"), str)})
                for e in s["events"] if isinstance(e, dict) and isinstance(e.get("name"), str)
                and e["name"] in content_events.NAMES and isinstance(e.get("attributes"), list)])
    st = s.get("status") or {}
    if not isinstance(st, dict):
        raise InputError(f"{_where(place)}.status: expected an object")
    name = str(s.get("name", ""))
    try:
        start = int(s.get("startTimeUnixNano") or 0)
    except (TypeError, ValueError, OverflowError):
        start = _int(s.get("startTimeUnixNano"), place, "startTimeUnixNano")
    try:
        end = int(s.get("endTimeUnixNano") or 0)
    except (TypeError, ValueError, OverflowError):
        end = _int(s.get("endTimeUnixNano"), place, "endTimeUnixNano")
    if not (0 <= start < FIXED64 and 0 <= end < FIXED64):  # the protobuf reader cannot see others
        bad = "startTimeUnixNano" if not 0 <= start < FIXED64 else "endTimeUnixNano"
        raise InputError(f"{_where(place)}.{bad}: {s.get(bad)!r} is not a nanosecond time (0 to 2^64-1)")
    code = st.get("code", 0)
    return build_span(tid, sid, parent, name, start, end,
                      code if type(code) is int else _status(code, place), str(st.get("message", "")), attrs,
                      owned=True)


def read(doc: dict[str, Any]) -> list[SpanRecord]:
    traces: dict[str, str] = {}
    parents: dict[str, str] = {}
    versions: dict[int, Any] = {}
    resource_spans = doc.get("resourceSpans")
    # not a list: _located_spans below says so, naming the field
    for i, rs in enumerate(resource_spans if isinstance(resource_spans, list) else ()):
        resource = rs.get("resource") if isinstance(rs, dict) else None
        attrs = resource.get("attributes") if isinstance(resource, dict) else None
        for kv in attrs if isinstance(attrs, list) else ():
            if isinstance(kv, dict) and kv.get("key") == SERVICE_VERSION:
                versions[i] = value(kv.get("value"))
    return [_span(s, place, traces, parents, versions.get(place[0])) for place, s in _located_spans(doc)]
