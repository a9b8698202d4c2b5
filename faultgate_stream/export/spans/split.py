"""Export requests cut to the downstream's limits, by bytes and by span count."""
from __future__ import annotations

from collections.abc import Iterator

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from faultgate_stream.read.otlp_proto import FIELD_FRAMING, scope_overhead


def span_count(request: ExportTraceServiceRequest) -> int:
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)


def chunks(request: ExportTraceServiceRequest, max_spans: int, max_bytes: int) -> Iterator[tuple[bytes, int]]:
    """(payload, spans) pieces of at most ``max_spans`` spans and ``max_bytes`` bytes (sizes
    counted as upper bounds, framing included); each span keeps its resource and scope. A
    single span over ``max_bytes`` goes alone: the caller decides what becomes of it."""
    payload = request.SerializeToString()
    total = span_count(request)
    if total <= max_spans and len(payload) <= max_bytes:
        if total:
            yield payload, total
        return
    out, n, size = ExportTraceServiceRequest(), 0, 0
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            header = scope_overhead(rs, ss)
            target = None  # this scope's ScopeSpans in the current piece
            for span in ss.spans:
                cost = span.ByteSize() + FIELD_FRAMING
                if n and (n + 1 > max_spans or size + cost + (header if target is None else 0) > max_bytes):
                    yield out.SerializeToString(), n
                    out, n, size, target = ExportTraceServiceRequest(), 0, 0, None
                if target is None:
                    r = out.resource_spans.add(resource=rs.resource, schema_url=rs.schema_url)
                    target = r.scope_spans.add(scope=ss.scope, schema_url=ss.schema_url)
                    size += header
                target.spans.append(span)
                n += 1
                size += cost
    if n:
        yield out.SerializeToString(), n


def packed(entries: list[bytes], max_spans: int, max_bytes: int) -> Iterator[tuple[bytes, int]]:
    """``chunks`` for spans already encoded one per ``resource_spans`` entry: (payload,
    spans) pieces of at most ``max_spans`` entries and about ``max_bytes`` bytes; an entry
    over ``max_bytes`` goes alone."""
    group: list[bytes] = []
    size = 0
    for e in entries:
        if group and (len(group) + 1 > max_spans or size + len(e) > max_bytes):
            yield b"".join(group), len(group)
            group, size = [], 0
        group.append(e)
        size += len(e)
    if group:
        yield b"".join(group), len(group)
