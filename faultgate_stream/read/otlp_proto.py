"""OTLP protobuf (``ExportTraceServiceRequest``) -> ``SpanRecord``, from the request's
bytes: upb parses them (acceptance, and the message export forwards), the compiled reader
(native/src/lib.rs) decodes what records are built from. Through upb's Python objects a
span's attributes alone cost ~11 CPU us (an object per ``KeyValue`` and ``AnyValue``);
the compiled reader decodes a whole span in ~2 (bench/README.md).

Individually bad spans are returned as rejections, not raised, so a receiver can answer
with partial success and keep the good ones.
"""
from __future__ import annotations

from dataclasses import dataclass

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.model.run import SERVICE_VERSION
from faultgate_stream import _native
from faultgate_stream.read import events
from faultgate_stream.read.rows import row_record
from faultgate_stream.read.projection import Projection


@dataclass(frozen=True, slots=True)
class Decoded:
    spans: list[SpanRecord]
    rejected: int
    first_problem: str  # "" when nothing was rejected


def parse(data: bytes) -> ExportTraceServiceRequest:
    try:
        return ExportTraceServiceRequest.FromString(data)
    except DecodeError as e:
        raise InputError(f"payload is not an ExportTraceServiceRequest: {e}") from None


def read(data: bytes, projection: Projection | None = None) -> Decoded:
    """The records of a request's bytes, with the attributes ``projection`` names (every
    one without it). ``data`` must be a request upb parsed (``decode``): the compiled reader
    (native/src/lib.rs) reads what upb accepted, the way upb reads it, and leaves acceptance
    to it."""
    spans: list[SpanRecord] = []
    rejected = 0
    first = ""
    wire, kept = (projection.wire, projection.kept) if projection is not None else (None, None)
    try:
        versions, scopes = _native.read_spans(data, SERVICE_VERSION, events.EVENT, wire)
    except ValueError as e:  # bytes upb did not parse: a caller's bug, reported as the input's
        raise InputError(f"payload is not an ExportTraceServiceRequest: {e}") from None
    for i, j, rows in scopes:
        version = versions[i]
        # ids come as hex: "" when absent, None when malformed (wrong length, all zero)
        for k, (tid, sid, parent, name, start, end, code, message, attrs, evaluations) in enumerate(rows):
            problem = ("trace_id is not 16 bytes, or is all zero" if not tid else
                       "span_id is not 8 bytes, or is all zero" if not sid else
                       "parent_span_id is not 8 bytes" if parent is None else "")
            if problem:
                rejected += 1
                first = first or f"resource_spans[{i}].scope_spans[{j}].spans[{k}]: {problem}"
                continue
            spans.append(row_record(version, tid, sid, parent or None, name, start, end, code, message, attrs,
                                    evaluations, kept))
    return Decoded(spans, rejected, first)


def decode(data: bytes, projection: Projection | None = None) -> tuple[ExportTraceServiceRequest, Decoded]:
    """The parsed request (what export forwards) and its records."""
    request = parse(data)
    return request, read(data, projection)

