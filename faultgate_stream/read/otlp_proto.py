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


def read(request: ExportTraceServiceRequest) -> Decoded:
    spans: list[SpanRecord] = []
    rejected = 0
    first = ""
    for i, rs in enumerate(request.resource_spans):
        version = next((value(kv.value) for kv in rs.resource.attributes if kv.key == SERVICE_VERSION), None)
        for j, ss in enumerate(rs.scope_spans):
            for k, s in enumerate(ss.spans):
                tid = hex_id(s.trace_id, TRACE_ID_BYTES)
                sid = hex_id(s.span_id, SPAN_ID_BYTES)
                parent = hex_id(s.parent_span_id, SPAN_ID_BYTES) if s.parent_span_id else None
                problem = ("trace_id is not 16 bytes, or is all zero" if tid is None else
                           "span_id is not 8 bytes, or is all zero" if sid is None else
                           "parent_span_id is not 8 bytes" if s.parent_span_id and parent is None else "")
                if problem:
                    rejected += 1
                    first = first or f"resource_spans[{i}].scope_spans[{j}].spans[{k}]: {problem}"
                    continue
                attrs = {kv.key: value(kv.value) for kv in s.attributes}
                if version and (parent is None or attrs.get("gen_ai.operation.name") == "invoke_agent"):
                    attrs.setdefault(SERVICE_VERSION, version)
                if s.events:
                    evaluations = events.from_proto(s.events, value)
                    if evaluations:
                        attrs[events.EVALUATIONS] = evaluations
                spans.append(build_span(tid, sid, parent, s.name, s.start_time_unix_nano, s.end_time_unix_nano,
                                        s.status.code, s.status.message, attrs))
    return Decoded(spans, rejected, first)
