"""The send queue as span export's ledger (issue 42): in flight is made of counts that only
hold spans that are there, so it never goes below zero, and one snapshot gives every side
of ``accepted = sent + failed + filtered + in flight``."""
from __future__ import annotations

import threading

from faultgate_stream.export.spans.queue import Item, SendQueue


def _queue() -> tuple[SendQueue, list[int]]:
    errors: list[int] = []
    return SendQueue(100, on_error=lambda: errors.append(1)), errors


def test_spans_put_that_were_never_reserved_are_an_internal_error_not_a_negative_gauge():
    q, errors = _queue()
    q.reserve(1)
    q.put(Item("traces", b"two spans", 2))  # a forwarder that queues more than it reserved
    assert errors == [1] and q.in_flight == 2
    items = q.take(10, 1 << 20, timeout=0)
    q.done(2, items, sent=2)
    assert q.in_flight == 0 and q.ledger().sent == 2


def test_spans_finished_that_were_never_taken_are_an_internal_error_not_a_negative_gauge():
    q, errors = _queue()
    q.done(5, sent=5)
    assert errors == [1] and q.in_flight == 0


def test_release_gives_back_room_and_counts_what_was_filtered_or_failed():
    q, errors = _queue()
    q.reserve(10)
    q.release(3)                      # reserved in error: the request was refused after all
    q.release(2, filtered=True)
    q.release(1, failed="handed_over")
    ledger = q.ledger()
    assert (ledger.in_flight, ledger.filtered, ledger.failed, errors) == (4, 2, {"handed_over": 1}, [])


def test_every_snapshot_balances_while_workers_send():
    """Accepted spans are reserved, queued and sent by concurrent threads; a snapshot taken
    at any moment accounts for each of them exactly once."""
    q, errors = SendQueue(10_000), []
    accepted = 0
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set() or q.in_flight:
            items = q.take(7, 1 << 20, timeout=0.01)
            if items:
                n = sum(i.spans for i in items)
                q.done(n, items, sent=n - 1, failed={"downstream_rejected": 1})

    workers = [threading.Thread(target=work) for _ in range(3)]
    for w in workers:
        w.start()
    snapshots = []
    for n in range(2000):
        q.reserve(3)
        q.put(Item("traces", b"x", 3))
        accepted += 3
        if n % 10 == 0:
            snapshots.append((accepted, q.ledger()))
    stop.set()
    for w in workers:
        w.join(10)
    snapshots.append((accepted, q.ledger()))
    for acc, ledger in snapshots:
        assert acc == ledger.sent + sum(ledger.failed.values()) + ledger.filtered + ledger.in_flight
        assert ledger.in_flight >= 0
    assert snapshots[-1][1].in_flight == 0 and not errors
