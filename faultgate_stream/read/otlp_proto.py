"""OTLP protobuf (``ExportTraceServiceRequest``) -> ``SpanRecord``, from the request's
bytes: the compiled check (native/core/src/read/accept.rs) accepts what upb would parse, and
the compiled reader (native/core/src/read/otlp_proto.rs) builds the records from the same
bytes, with the conventions (native/core/src/read/conventions.rs). Through upb's Python
objects a span's attributes alone cost ~11 CPU us (an object per ``KeyValue`` and
``AnyValue``), and building its record in Python ~8 more (bench/README.md).

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
from faultgate_stream.read.projection import Projection


@dataclass(frozen=True, slots=True)
class Decoded:
    spans: list[SpanRecord]
    rejected: int
    first_problem: str  # "" when nothing was rejected


class Received:
    """A trace request as it arrived: its bytes, which export forwards as they are (less the
    roots it holds: ``_native.cut``), and upb's parse of them, made only when a rarer
    forwarding path must rewrite spans one by one (``message``)."""

    __slots__ = ("body", "_message")

    def __init__(self, body: bytes, message: ExportTraceServiceRequest | None = None) -> None:
        self.body = body
        self._message = message

    @classmethod
    def of(cls, message: ExportTraceServiceRequest) -> Received:
        return cls(message.SerializeToString(), message)

    @property
    def message(self) -> ExportTraceServiceRequest:
        if self._message is None:
            self._message = parse(self.body)
        return self._message


def parse(data: bytes) -> ExportTraceServiceRequest:
    try:
        return ExportTraceServiceRequest.FromString(data)
    except DecodeError as e:
        raise InputError(f"payload is not an ExportTraceServiceRequest: {e}") from None


def read(data: bytes, projection: Projection | None = None) -> Decoded:
    """The records of a request's bytes, with the attributes ``projection`` names (every
    one without it). ``data`` must be a request ``accept`` took (``decode``): the compiled
    reader reads what upb would accept, the way upb reads it, and leaves acceptance to it.
    A span whose ids are malformed is rejected (counted, the first one named), not read."""
    try:
        spans, rejected, first = _native.read_spans(data, SERVICE_VERSION, events.EVENT,
                                                    projection.wire if projection is not None else None)
    except ValueError as e:  # bytes never accepted: a caller's bug, reported as the input's
        raise InputError(f"payload is not an ExportTraceServiceRequest: {e}") from None
    return Decoded(spans, rejected, first)


def accept(data: bytes) -> None:
    """Raises ``InputError`` naming what is wrong, and where, unless ``data`` is a request
    upb would parse (native/core/src/read/accept.rs: upb's acceptance without its parse)."""
    try:
        _native.check_traces(data)
    except ValueError as e:
        raise InputError(f"payload is not an ExportTraceServiceRequest: {e}") from None


def decode(data: bytes, projection: Projection | None = None) -> tuple[Received, Decoded]:
    """The request as received (what export forwards) and its records."""
    accept(data)
    return Received(data), read(data, projection)

