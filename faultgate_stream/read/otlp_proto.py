"""OTLP protobuf (``ExportTraceServiceRequest``) -> ``SpanRecord``, from the request's
bytes: upb parses them (acceptance), the compiled reader
(native/src/read/otlp_proto.rs) builds the records from the same bytes, with the
conventions (native/src/read/conventions.rs). Through upb's Python objects a span's
attributes alone cost ~11 CPU us (an object per ``KeyValue`` and ``AnyValue``), and
building its record in Python ~8 more (bench/README.md).

Individually bad spans are returned as rejections, not raised, so a receiver can answer
with partial success and keep the good ones.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.model.run import SERVICE_VERSION
from faultgate_stream import _native
from faultgate_stream.read import events
from faultgate_stream.read.projection import Projection


@dataclass(frozen=True, slots=True)
class Decoded:
    spans: list[SpanRecord]
    rejected: int
    first_problem: str  # "" when nothing was rejected


class Received(NamedTuple):
    """A trace request as it arrived: its bytes, which export forwards as they are (less the
    roots it holds: ``_native.cut``), and upb's parse of them, which decided acceptance and
    which the rarer forwarding paths rewrite span by span."""

    body: bytes
    message: ExportTraceServiceRequest

    @classmethod
    def of(cls, message: ExportTraceServiceRequest) -> Received:
        return cls(message.SerializeToString(), message)


def parse(data: bytes) -> ExportTraceServiceRequest:
    try:
        return ExportTraceServiceRequest.FromString(data)
    except DecodeError as e:
        raise InputError(f"payload is not an ExportTraceServiceRequest: {e}") from None


def read(data: bytes, projection: Projection | None = None) -> Decoded:
    """The records of a request's bytes, with the attributes ``projection`` names (every
    one without it). ``data`` must be a request upb parsed (``decode``): the compiled reader
    reads what upb accepted, the way upb reads it, and leaves acceptance to it. A span whose
    ids are malformed is rejected (counted, the first one named), not read."""
    try:
        spans, rejected, first = _native.read_spans(data, SERVICE_VERSION, events.EVENT,
                                                    projection.wire if projection is not None else None)
    except ValueError as e:  # bytes upb did not parse: a caller's bug, reported as the input's
        raise InputError(f"payload is not an ExportTraceServiceRequest: {e}") from None
    return Decoded(spans, rejected, first)


def decode(data: bytes, projection: Projection | None = None) -> tuple[Received, Decoded]:
    """The request as received (what export forwards) and its records."""
    return Received(data, parse(data)), read(data, projection)

