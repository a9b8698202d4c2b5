"""Root candidates waiting for their run's verdict, kept as bytes.

A held span is its own bytes, copied out of the request's (with its resource and scope:
``_native.spans_at``) instead of referencing the request: one root of a 512-span request
then costs its own bytes, not the request's. Bounded by the send queue's
reservation, which every held span holds.
"""
from __future__ import annotations

import threading
from typing import NamedTuple


class HeldSpan(NamedTuple):
    """Bytes, strings and an int, built by one tuple allocation (a frozen dataclass set
    each field through ``object.__setattr__``). A tuple subclass stays tracked by the
    collector, as the dataclass did; held roots are few (one per run in flight)."""

    resource: bytes
    resource_schema: str
    scope: bytes
    scope_schema: str
    span: bytes
    end_ns: int = 0  # the span's end time: its evaluation events are stamped with it


class HeldSpans:
    """Held spans by trace, then span id: a verdict releases its run's spans (a dozen or
    more ids) of which one or two are held, so the lookup starts from what the trace holds."""

    def __init__(self) -> None:
        self._spans: dict[str, dict[str, HeldSpan]] = {}
        self._count = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._count

    def hold(self, trace_id: str, span_id: str, held: HeldSpan) -> bool:
        """False when a span with this key is already held (an OTLP retry's duplicate)."""
        with self._lock:
            of = self._spans.get(trace_id)
            if of is None:
                of = self._spans[trace_id] = {}
            elif span_id in of:
                return False
            of[span_id] = held
            self._count += 1
            return True

    def release(self, trace_id: str, span_ids: frozenset[str] | set[str]) -> dict[str, HeldSpan]:
        """The held spans among ``span_ids``, taken out, in the order they were held."""
        with self._lock:
            of = self._spans.get(trace_id)
            if of is None:
                return {}
            out = {sid: h for sid, h in of.items() if sid in span_ids}
            if len(out) == len(of):
                del self._spans[trace_id]
            else:
                for sid in out:
                    del of[sid]
            self._count -= len(out)
            return out

    def release_traces(self, trace_ids: set[str]) -> dict[tuple[str, str], HeldSpan]:
        """Take out every span held for these traces (a durable source handing them over)."""
        with self._lock:
            out = {(tid, sid): h for tid in trace_ids for sid, h in self._spans.pop(tid, {}).items()}
            self._count -= len(out)
            return out

    def release_all(self) -> dict[tuple[str, str], HeldSpan]:
        with self._lock:
            out = {(tid, sid): h for tid, of in self._spans.items() for sid, h in of.items()}
            self._spans, self._count = {}, 0
            return out
