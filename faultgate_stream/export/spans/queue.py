"""The bounded sending queue, counted in spans.

Room is *reserved* before a request is acknowledged (``reserve`` raises ``CapacityError``
when full, so the receiver refuses retryably and nothing accepted is ever dropped for
lack of room), and *released* only when the spans were exported or finally failed. Roots
waiting for their verdict hold their reservation while they wait, so the bound covers
every span accepted and not yet exported.

Items are numbered as they are queued, so a durable source can ask whether everything
queued before some moment has left (``mark`` / ``passed``): the commit of an offset waits
for the spans it carried, whichever worker sends them and in whatever order.

The queue is also the ledger of span export, under one lock (issue 42): spans in flight
are three counts that only ever hold spans that are there (reserved and not yet queued,
queued, being sent), so the gauge made of them cannot go below zero; and what left is
counted here too (``sent``, ``failed`` by reason, ``filtered``), so that one snapshot
(``ledger``) gives both sides of ``accepted = sent + failed + filtered + in flight`` at
one instant. A put of spans never reserved, or a settle of spans never taken, is a bug:
it is counted as an internal error (``on_error``), never let through as a negative count.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from operator import attrgetter
from typing import NamedTuple

from faultgate_stream.model.errors import BoundError, CapacityError


class Item(NamedTuple):
    """One serialized OTLP export request (traces or logs) and how many spans it carries.
    Compared by identity in the queue (``id``), never by value."""

    kind: str         # "traces" | "logs"
    payload: bytes    # ExportTraceServiceRequest / ExportLogsServiceRequest bytes
    spans: int        # spans it carries (0 for logs)
    records: int = 0  # log records it carries


_RECORDS = attrgetter("records")


class Ledger(NamedTuple):
    """Span export's counts at one instant."""

    in_flight: int
    sent: int
    failed: dict[str, int]
    filtered: int


class SendQueue:
    def __init__(self, capacity_spans: int, retry_after_s: float = 1.0, capacity_records: int = 50_000,
                 on_error: Callable[[], None] | None = None) -> None:
        self.capacity = capacity_spans
        self.capacity_records = capacity_records
        self._queued_records = 0
        self._retry_after = retry_after_s
        self._items: deque[Item] = deque()
        self._open = 0           # spans reserved and not yet queued (held roots among them)
        self._sending_spans = 0  # spans taken by a worker and not yet done
        self._sent = 0
        self._failed: dict[str, int] = {}
        self._filtered = 0
        self._on_error = on_error
        self._queued_spans = 0
        self._queued_bytes = 0   # payload bytes queued, for a lingering take
        # the condition's own lock (an RLock, as ``Condition()`` makes), entered directly by
        # whoever does not wait or notify: ``Condition.__enter__``/``__exit__`` are Python,
        # two frames a put, and a put is per decided run
        self._lock = threading.RLock()
        self._cv = threading.Condition(self._lock)
        self._closed = False
        self.full_refusals = 0
        # the limits a lingering take waits to reach (its max_spans, max_bytes); until a take
        # lingers, every put wakes the workers
        self._full_spans = 0
        self._full_bytes = 0
        self._seq = 0                          # items queued so far
        self._seq_of: dict[int, int] = {}      # id(item) -> its number, queued or being sent
        self._sending: dict[int, int] = {}     # id(item) -> its number, taken and not done

    @property
    def in_flight(self) -> int:
        """Spans accepted and not yet exported or failed: each count is of spans that are
        there, so the sum is never below zero."""
        return self._open + self._queued_spans + self._sending_spans

    def ledger(self) -> Ledger:
        with self._lock:
            return Ledger(self.in_flight, self._sent, dict(self._failed), self._filtered)

    def _error(self) -> None:
        if self._on_error is not None:
            self._on_error()

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
        with self._lock:
            if self.in_flight + spans > self.capacity:
                self.full_refusals += 1
                raise CapacityError(f"export queue full ({self.in_flight} of {self.capacity} spans in flight)",
                                    bound="export_queue", retry_after_s=self._retry_after)
            self._open += spans

    def release(self, spans: int, *, filtered: bool = False, failed: str = "") -> None:
        """Give back room for spans that will not be queued: reserved in error (the request
        was refused after all), left out by configuration (``filtered``), or failed for good
        before they were queued (``failed``: the reason)."""
        with self._lock:
            self._unreserve(spans)
            if filtered:
                self._filtered += spans
            elif failed:
                self._failed[failed] = self._failed.get(failed, 0) + spans
            self._cv.notify_all()

    def _unreserve(self, spans: int) -> None:
        if spans > self._open:  # spans never reserved: a bug, counted, never a negative count
            self._error()
            spans = self._open
        self._open -= spans

    def put(self, item: Item) -> None:
        """Queue an item whose spans were reserved. Never blocks, never refuses."""
        with self._lock:
            self._unreserve(item.spans)
            self._number(item)
            self._items.append(item)
            self._queued_spans += item.spans
            self._queued_bytes += len(item.payload)
            self._wake(len(self._items) == 1)

    def _wake(self, first: bool) -> None:
        """Wake the workers when one has something to do: an item arrived in an empty queue
        (a worker waits for the first), or a lingering worker's batch is full (otherwise its
        wait ends by itself when the linger is over). Woken by every put, a lingering worker
        took a thread switch and the GIL ~22 times per call it made under the bench's load
        (bench/export_batches.py)."""
        if first or self._queued_spans >= self._full_spans or self._queued_bytes >= self._full_bytes:
            self._cv.notify_all()

    def _number(self, item: Item) -> None:
        self._seq += 1
        self._seq_of[id(item)] = self._seq

    def mark(self) -> int:
        """A number covering every item queued so far."""
        with self._lock:
            return self._seq

    def passed(self, mark: int) -> bool:
        """True once every item queued up to ``mark`` was sent or failed for good."""
        with self._lock:
            oldest = self._seq_of[id(self._items[0])] if self._items else mark + 1
            if self._sending:
                oldest = min(oldest, min(self._sending.values()))
            return oldest > mark

    def put_records(self, item: Item) -> bool:
        """Queue evaluation log records unless their own bound is reached. They are derived
        from verdicts, not received data, so at the bound they are dropped (and counted by
        the caller) rather than refusing spans upstream."""
        with self._lock:
            if self._queued_records + item.records > self.capacity_records:
                return False
            self._number(item)
            self._items.append(item)
            self._queued_records += item.records
            self._queued_bytes += len(item.payload)
            self._wake(len(self._items) == 1)
            return True

    def take(self, max_spans: int, max_bytes: int, timeout: float, linger: float = 0.0) -> list[Item]:
        """Items of one kind, up to the limits (at least one item), waiting up to ``timeout``
        for the first. Then, for up to ``linger`` seconds, more are let in until the
        limits are reached: each export call has a fixed cost, and taking only what was
        queued sent ~90 spans a call under load (bench/README.md). Closing ends the wait."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                while not self._items:
                    left = deadline - time.monotonic()
                    if self._closed or left <= 0:
                        return []
                    self._cv.wait(left)
                if linger > 0:
                    self._full_spans, self._full_bytes = max_spans, max_bytes
                    full_by = time.monotonic() + linger
                    while not self._closed and self._queued_spans < max_spans and self._queued_bytes < max_bytes:
                        left = full_by - time.monotonic()
                        if left <= 0:
                            break
                        self._cv.wait(left)
                if self._items:  # another worker may have taken them meanwhile
                    break
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
            self._queued_bytes -= size
            self._queued_records -= sum(map(_RECORDS, out))  # C-level: an item is often one run's root
            self._sending_spans += spans
            for i in out:
                self._sending[id(i)] = self._seq_of.pop(id(i))
            return out

    def done(self, spans: int, items: list[Item] = (), *, sent: int = 0, failed: dict[str, int] | None = None) -> None:
        """Spans taken and finished with: exported (``sent``) or failed for good (``failed``,
        by reason), counted in the same instant their room is freed. ``items``: the ones
        taken that are finished with (their numbers leave ``passed``'s reckoning)."""
        with self._lock:
            for i in items:
                self._sending.pop(id(i), None)
            if spans > self._sending_spans:  # spans never taken: a bug, counted
                self._error()
                spans = self._sending_spans
            self._sending_spans -= spans
            self._sent += sent
            for reason, n in (failed or {}).items():
                self._failed[reason] = self._failed.get(reason, 0) + n
            self._cv.notify_all()

    def wait_empty(self, timeout: float) -> bool:
        """True once every reserved span was exported or failed (shutdown drains with it)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self.in_flight > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(left)
            return True

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._cv.notify_all()
