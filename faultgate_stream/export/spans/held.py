"""Root candidates waiting for their run's verdict, kept as bytes.

A span of a parsed upb request keeps the whole request's arena alive, so a held span is
serialized (with its resource and scope) instead of referenced: one root of a 512-span
request then costs its own bytes, not the request's. Bounded by the send queue's
reservation, which every held span holds.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span

from faultgate_stream.export.spans import wire


@dataclass(frozen=True, slots=True)
class HeldSpan:
    resource: bytes
    resource_schema: str
    scope: bytes
    scope_schema: str
    span: bytes
    end_ns: int = 0  # the span's end time: its evaluation events are stamped with it

    def request_entry(self, span: bytes) -> bytes:
        """``span`` (this span's encoding, annotated or not) as one ``resource_spans``
        entry of an export request, under this span's resource and scope."""
        return wire.resource_spans_entry(self.resource, self.resource_schema, self.scope, self.scope_schema,
                                         wire.field(wire.SCOPE_SPANS_SPANS, span))

    def resource_spans(self, span: Span | None = None) -> ResourceSpans:
        rs = ResourceSpans(resource=Resource.FromString(self.resource), schema_url=self.resource_schema)
        ss = rs.scope_spans.add(scope=InstrumentationScope.FromString(self.scope), schema_url=self.scope_schema)
        ss.spans.append(span if span is not None else Span.FromString(self.span))
        return rs


class HeldSpans:
    def __init__(self) -> None:
        self._spans: dict[tuple[str, str], HeldSpan] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._spans)

    def hold(self, trace_id: str, span_id: str, held: HeldSpan) -> bool:
        """False when a span with this key is already held (an OTLP retry's duplicate)."""
        with self._lock:
            if (trace_id, span_id) in self._spans:
                return False
            self._spans[(trace_id, span_id)] = held
            return True

    def release(self, trace_id: str, span_ids: frozenset[str] | set[str]) -> dict[str, HeldSpan]:
        with self._lock:
            return {sid: h for sid in span_ids if (h := self._spans.pop((trace_id, sid), None)) is not None}

    def release_traces(self, trace_ids: set[str]) -> dict[tuple[str, str], HeldSpan]:
        """Take out every span held for these traces (a durable source handing them over)."""
        with self._lock:
            keys = [k for k in self._spans if k[0] in trace_ids]
            return {k: self._spans.pop(k) for k in keys}

    def release_all(self) -> dict[tuple[str, str], HeldSpan]:
        with self._lock:
            out, self._spans = self._spans, {}
            return out
