"""The bounded sending queue, counted in spans.

Room is *reserved* before a request is acknowledged (``reserve`` raises ``CapacityError``
when full, so the receiver refuses retryably and nothing accepted is ever dropped for
lack of room), and *released* only when the spans were exported or finally failed. Roots
waiting for their verdict hold their reservation while they wait, so the bound covers
every span accepted and not yet exported.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass

from faultgate_stream.model.errors import BoundError, CapacityError


@dataclass(frozen=True, slots=True)
class Item:
    """One serialized OTLP export request (traces or logs) and how many spans it carries."""

    kind: str         # "traces" | "logs"
    payload: bytes    # ExportTraceServiceRequest / ExportLogsServiceRequest bytes
    spans: int        # spans it carries (0 for logs)
    records: int = 0  # log records it carries


class SendQueue:
    def __init__(self, capacity_spans: int, retry_after_s: float = 1.0, capacity_records: int = 50_000) -> None:
        self.capacity = capacity_spans
        self.capacity_records = capacity_records
        self._queued_records = 0
        self._retry_after = retry_after_s
        self._items: deque[Item] = deque()
        self._reserved = 0       # spans accepted and not yet exported or failed
        self._queued_spans = 0
        self._cv = threading.Condition()
        self._closed = False
        self.full_refusals = 0

    @property
    def in_flight(self) -> int:
        return self._reserved

    @property
    def queued(self) -> int:
        return self._queued_spans

    @property
    def closed(self) -> bool:
        return self._closed

    def reserve(self, spans: int) -> None:
        if spans > self.capacity:
            # retrying could never help: not even an empty queue holds it (issue 9, defect 10)
            raise BoundError(f"request has {spans} spans, more than the export queue holds "
                             f"(export.queue_spans: {self.capacity}); send smaller batches", bound="export_queue")
        with self._cv:
            if self._reserved + spans > self.capacity:
                self.full_refusals += 1
                raise CapacityError(f"export queue full ({self._reserved} of {self.capacity} spans in flight)",
                                    bound="export_queue", retry_after_s=self._retry_after)
            self._reserved += spans

    def release(self, spans: int) -> None:
        """Give back room for spans that will not be queued (they were reserved in error)."""
        with self._cv:
            self._reserved -= spans
            self._cv.notify_all()

    def put(self, item: Item) -> None:
        """Queue an item whose spans were reserved. Never blocks, never refuses."""
        with self._cv:
            self._items.append(item)
            self._queued_spans += item.spans
            self._cv.notify_all()

    def put_records(self, item: Item) -> bool:
        """Queue evaluation log records unless their own bound is reached. They are derived
        from verdicts, not received data, so at the bound they are dropped (and counted by
        the caller) rather than refusing spans upstream."""
        with self._cv:
            if self._queued_records + item.records > self.capacity_records:
                return False
            self._items.append(item)
            self._queued_records += item.records
            self._cv.notify_all()
            return True

    def take(self, max_spans: int, max_bytes: int, timeout: float) -> list[Item]:
        """Items of one kind, up to the limits (at least one item), waiting up to ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while not self._items:
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    return []
                self._cv.wait(left)
            first = self._items.popleft()
            out, spans, size = [first], first.spans, len(first.payload)
            while self._items:
                nxt = self._items[0]
                if nxt.kind != first.kind or spans + nxt.spans > max_spans or size + len(nxt.payload) > max_bytes:
                    break
                out.append(self._items.popleft())
                spans += nxt.spans
                size += len(nxt.payload)
            self._queued_spans -= spans
            self._queued_records -= sum(i.records for i in out)
            return out

    def done(self, spans: int) -> None:
        """Spans exported, or failed for good: their room is free again."""
        with self._cv:
            self._reserved -= spans
            self._cv.notify_all()

    def wait_empty(self, timeout: float) -> bool:
        """True once every reserved span was exported or failed (shutdown drains with it)."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while self._reserved > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(left)
            return True

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify_all()
