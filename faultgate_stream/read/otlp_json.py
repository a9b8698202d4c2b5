"""OTLP/JSON (``{"resourceSpans": [...]}``) -> ``SpanRecord``.

The JSON mapping of OTLP: hex ids, 64-bit integers as strings, enums as ints or names,
``AnyValue`` objects for attribute values.
"""
from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.read.conventions import build_span
from faultgate_stream.read.ids import SPAN_ID_BYTES, TRACE_ID_BYTES, hex_id

STATUS_NAMES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}


def value(v: Any) -> Any:
    """An OTLP/JSON ``AnyValue`` as a plain Python value."""
    if not isinstance(v, dict):
        return v
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "arrayValue" in v:
        return [value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return {kv["key"]: value(kv.get("value")) for kv in (v["kvlistValue"] or {}).get("values", [])}
    if "bytesValue" in v:
        return base64.b64decode(v["bytesValue"])
    return None


def _int(v: Any, where: str) -> int:
    try:
        return int(v or 0)
    except (TypeError, ValueError):
        raise InputError(f"{where}: {v!r} is not an integer") from None


def _status(raw: Any, where: str) -> int:
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str):
        if raw in STATUS_NAMES:
            return STATUS_NAMES[raw]
        if raw.isdigit():
            return int(raw)
    if raw is None:
        return 0
    raise InputError(f"{where}.status.code: {raw!r} is not a status code")


def raw_spans(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each span object with the path it sits at, for messages that say where."""
    rss = doc.get("resourceSpans")
    if not isinstance(rss, list):
        raise InputError("resourceSpans: expected a list")
    for i, rs in enumerate(rss):
        for j, ss in enumerate((rs or {}).get("scopeSpans") or []):
            for k, s in enumerate((ss or {}).get("spans") or []):
                yield f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]", s


def span(where: str, s: Any) -> SpanRecord:
    """One span object -> record. Raises ``InputError`` naming the field at fault."""
    if not isinstance(s, dict):
        raise InputError(f"{where}: expected an object")
    tid = hex_id(str(s.get("traceId", "")), TRACE_ID_BYTES)
    if tid is None:
        raise InputError(f"{where}.traceId: {s.get('traceId')!r} is not a 32-digit hex trace id")
    sid = hex_id(str(s.get("spanId", "")), SPAN_ID_BYTES)
    if sid is None:
        raise InputError(f"{where}.spanId: {s.get('spanId')!r} is not a 16-digit hex span id")
    parent = None
    if s.get("parentSpanId"):
        parent = hex_id(str(s["parentSpanId"]), SPAN_ID_BYTES)
        if parent is None:
            raise InputError(f"{where}.parentSpanId: {s['parentSpanId']!r} is not a 16-digit hex span id")
    attrs: dict[str, Any] = {}
    for kv in s.get("attributes") or []:
        if not isinstance(kv, dict) or "key" not in kv:
            raise InputError(f"{where}.attributes: expected {{key, value}} objects")
        attrs[kv["key"]] = value(kv.get("value"))
    st = s.get("status") or {}
    return build_span(tid, sid, parent, str(s.get("name", "")),
                      _int(s.get("startTimeUnixNano"), f"{where}.startTimeUnixNano"),
                      _int(s.get("endTimeUnixNano"), f"{where}.endTimeUnixNano"),
                      _status(st.get("code", 0), where), str(st.get("message", "")), attrs)


def read(doc: dict[str, Any]) -> list[SpanRecord]:
    return [span(where, s) for where, s in raw_spans(doc)]


def to_request(doc: Any) -> tuple[Any, int, str]:
    """OTLP/JSON -> (``ExportTraceServiceRequest``, spans whose ids are malformed, the first
    such problem). The live service and ``replay`` speak protobuf; a span whose ids cannot be
    converted keeps empty ids, so the protobuf reader rejects it like any other bad span.
    Raises ``InputError`` when the document is not OTLP/JSON at all."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    if not isinstance(doc, dict):
        raise InputError("not OTLP/JSON: expected an object with resourceSpans")
    bad, first = 0, ""
    for where, s in raw_spans(doc):
        if not isinstance(s, dict):
            raise InputError(f"{where}: expected an object")
        for key, n in (("traceId", TRACE_ID_BYTES), ("spanId", SPAN_ID_BYTES), ("parentSpanId", SPAN_ID_BYTES)):
            raw = s.get(key)
            if key == "parentSpanId" and not raw:
                s.pop(key, None)
                continue
            h = hex_id(str(raw or ""), n)
            if h is None:
                bad += 1
                first = first or f"{where}.{key}: {raw!r} is not a {2 * n}-digit hex id"
                s[key] = ""
            else:
                # the proto3 JSON mapping reads bytes as base64; OTLP/JSON writes hex
                s[key] = base64.b64encode(bytes.fromhex(h)).decode()
    try:
        request = json_format.ParseDict(doc, ExportTraceServiceRequest(), ignore_unknown_fields=True)
    except json_format.ParseError as e:
        raise InputError(f"not a valid OTLP/JSON trace export: {e}") from None
    return request, bad, first
