"""OTLP protobuf (``ExportTraceServiceRequest``) -> ``SpanRecord``, straight from the
parsed message: no JSON or dict form of the request in between.

Individually bad spans are returned as rejections, not raised, so a receiver can answer
with partial success and keep the good ones.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.model.run import SERVICE_VERSION
from faultgate_stream.read import events
from faultgate_stream.read.conventions import build_span
from faultgate_stream.read.ids import SPAN_ID_BYTES, TRACE_ID_BYTES, hex_id


@dataclass(frozen=True, slots=True)
class Decoded:
    spans: list[SpanRecord]
    rejected: int
    first_problem: str  # "" when nothing was rejected


def value(v: AnyValue) -> Any:
    which = v.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, which)


def parse(data: bytes) -> ExportTraceServiceRequest:
    try:
        return ExportTraceServiceRequest.FromString(data)
    except DecodeError as e:
        raise InputError(f"payload is not an ExportTraceServiceRequest: {e}") from None


def _attributes(kvs: Any) -> dict[str, Any]:
    """A span's attributes as plain values. Most are strings: those skip ``value``'s call
    (the dict comprehension through ``value`` took ~40% of a span's read)."""
    out: dict[str, Any] = {}
    for kv in kvs:
        v = kv.value
        if v.WhichOneof("value") == "string_value":
            out[kv.key] = v.string_value
        else:
            out[kv.key] = value(v)
    return out


def read(request: ExportTraceServiceRequest) -> Decoded:
    spans: list[SpanRecord] = []
    rejected = 0
    first = ""
    # The ids of one request repeat (a trace's spans share its id, siblings their parent):
    # each distinct id is checked and turned to hex once. Bounded by the request.
    traces: dict[bytes, str | None] = {}
    parents: dict[bytes, str | None] = {}
    for i, rs in enumerate(request.resource_spans):
        version = next((value(kv.value) for kv in rs.resource.attributes if kv.key == SERVICE_VERSION), None)
        for j, ss in enumerate(rs.scope_spans):
            for k, s in enumerate(ss.spans):
                raw_t, raw_p = s.trace_id, s.parent_span_id
                tid = traces.get(raw_t, _UNSEEN)
                if tid is _UNSEEN:
                    tid = traces[raw_t] = hex_id(raw_t, TRACE_ID_BYTES)
                sid = hex_id(s.span_id, SPAN_ID_BYTES)
                parent = None
                if raw_p:
                    parent = parents.get(raw_p, _UNSEEN)
                    if parent is _UNSEEN:
                        parent = parents[raw_p] = hex_id(raw_p, SPAN_ID_BYTES)
                problem = ("trace_id is not 16 bytes, or is all zero" if tid is None else
                           "span_id is not 8 bytes, or is all zero" if sid is None else
                           "parent_span_id is not 8 bytes" if raw_p and parent is None else "")
                if problem:
                    rejected += 1
                    first = first or f"resource_spans[{i}].scope_spans[{j}].spans[{k}]: {problem}"
                    continue
                attrs = _attributes(s.attributes)
                if version and (parent is None or attrs.get("gen_ai.operation.name") == "invoke_agent"):
                    attrs.setdefault(SERVICE_VERSION, version)
                if s.events:
                    evaluations = events.from_proto(s.events, value)
                    if evaluations:
                        attrs[events.EVALUATIONS] = evaluations
                status = s.status
                spans.append(build_span(tid, sid, parent, s.name, s.start_time_unix_nano, s.end_time_unix_nano,
                                        status.code, status.message, attrs, owned=True))
    return Decoded(spans, rejected, first)


_UNSEEN = object()
