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


# Where a span sits in its request: its resource_spans, scope_spans and spans indexes.
Place = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class Decoded:
    spans: list[SpanRecord]
    rejected: int
    first_problem: str  # "" when nothing was rejected
    # each rejected span's place and reason (a faultgate_receiver_rejected_spans label):
    # what export leaves out, whatever the span's ids (issue 42: a malformed second copy
    # of a valid span went downstream with it)
    rejections: tuple[tuple[int, int, int, str], ...] = ()

    def reasons(self) -> dict[str, int]:
        """Rejected spans by reason; ``invalid_span`` for those a caller counted alone."""
        out: dict[str, int] = {}
        for *_, reason in self.rejections:
            out[reason] = out.get(reason, 0) + 1
        if self.rejected > len(self.rejections):
            out["invalid_span"] = out.get("invalid_span", 0) + self.rejected - len(self.rejections)
        return out

    def rejected_places(self) -> frozenset[Place]:
        return frozenset(r[:3] for r in self.rejections)


class Received:
    """A trace request as it arrived: its bytes, which export forwards as they are (less the
    roots it holds: ``_native.cut``), and upb's parse of them, made only when a rarer
    forwarding path must rewrite spans one by one (``message``). ``rejected``: the places
    of the spans the reader rejected, which are never forwarded."""

    __slots__ = ("body", "_message", "rejected")

    def __init__(self, body: bytes, message: ExportTraceServiceRequest | None = None) -> None:
        self.body = body
        self._message = message
        self.rejected: frozenset[Place] = frozenset()

    @classmethod
    def of(cls, message: ExportTraceServiceRequest) -> Received:
        return cls(message.SerializeToString(), message)

    @property
    def message(self) -> ExportTraceServiceRequest:
        if self._message is None:
            self._message = parse(self.body)
        return self._message


# A length-delimited field's tag and length: at most 1 + 5 bytes under 4 GiB.
FIELD_FRAMING = 6


def scope_overhead(rs, ss) -> int:
    """An upper bound on the bytes a request spends on a span's resource and scope, framing
    included (the request's entry, the resource, its schema URL, the scope entry, the scope,
    its schema URL)."""
    return (rs.resource.ByteSize() + ss.scope.ByteSize() + len(rs.schema_url.encode()) + len(ss.schema_url.encode())
            + 6 * FIELD_FRAMING)


def alone_bytes(rs, ss, span) -> int:
    """An upper bound on the bytes of a request holding ``span`` alone, with its resource
    and scope: the smallest request it can be sent in."""
    return scope_overhead(rs, ss) + span.ByteSize() + FIELD_FRAMING


def reject_larger_than(received: Received, decoded: Decoded, limit: int, why: str) -> Decoded:
    """``decoded`` with the spans that no request of ``limit`` bytes can hold rejected too
    (reason ``too_large``), ``why`` saying whose limit it is. A request no larger than the
    limit holds no such span, and is not looked at again."""
    if len(received.body) <= limit:
        return decoded
    rejected = set(received.rejected)
    over: list[tuple[int, int, int, str]] = []
    first = ""
    for i, rs in enumerate(received.message.resource_spans):
        for j, ss in enumerate(rs.scope_spans):
            for k, span in enumerate(ss.spans):
                if (i, j, k) in rejected:
                    continue
                size = alone_bytes(rs, ss, span)
                if size > limit:
                    over.append((i, j, k, "too_large"))
                    first = first or (f"resource_spans[{i}].scope_spans[{j}].spans[{k}]: {size} bytes with its "
                                      f"resource and scope, more than {limit} ({why})")
    if not over:
        return decoded
    # the records are the request's spans in order, less those rejected already
    too_large = {r[:3] for r in over}
    kept, n = [], 0
    for place in _places(received.message):
        if place in rejected:
            continue
        if place not in too_large:
            kept.append(decoded.spans[n])
        n += 1
    received.rejected = frozenset(rejected | too_large)
    return Decoded(kept, decoded.rejected + len(over), decoded.first_problem or first,
                   tuple(sorted(decoded.rejections + tuple(over))))


def _places(request: ExportTraceServiceRequest):
    for i, rs in enumerate(request.resource_spans):
        for j, ss in enumerate(rs.scope_spans):
            for k in range(len(ss.spans)):
                yield i, j, k


def parse(data: bytes) -> ExportTraceServiceRequest:
    try:
        return ExportTraceServiceRequest.FromString(data)
    except DecodeError as e:
        raise InputError(f"payload is not an ExportTraceServiceRequest: {e}") from None


def read(data: bytes, projection: Projection | None = None) -> Decoded:
    """The records of a request's bytes, with the attributes ``projection`` names (every
    one without it). ``data`` must be a request ``accept`` took (``decode``): the compiled
    reader reads what upb would accept, the way upb reads it, and leaves acceptance to it.
    A span whose ids are malformed, or whose attributes are past a bound (read/bounds.py),
    is rejected (listed with its place, the first one named), not read."""
    try:
        spans, rejections, first = _native.read_spans(data, SERVICE_VERSION, events.EVENT,
                                                       projection.wire if projection is not None else None)
    except ValueError as e:  # bytes never accepted: a caller's bug, reported as the input's
        raise InputError(f"payload is not an ExportTraceServiceRequest: {e}") from None
    return Decoded(spans, len(rejections), first, tuple(rejections))


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
    received, decoded = Received(data), read(data, projection)
    received.rejected = decoded.rejected_places()
    return received, decoded

