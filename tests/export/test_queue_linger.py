"""A worker's take lingers for its batch to fill: what is queued meanwhile goes in the same
call, a full batch or closing ends the wait, and two lingering workers never both take the
same items."""
from __future__ import annotations

import threading

from faultgate_stream.export.spans.queue import Item, SendQueue


def _queue_later(q: SendQueue, items: list[Item], start: threading.Event) -> threading.Thread:
    def run() -> None:
        start.wait()
        for i in items:
            q.reserve(i.spans)
            q.put(i)
    th = threading.Thread(target=run)
    th.start()
    return th


def test_items_queued_during_the_linger_go_in_one_take():
    q = SendQueue(1000)
    q.reserve(1)
    q.put(Item("traces", b"a", 1))
    go = threading.Event()
    th = _queue_later(q, [Item("traces", b"b", 2), Item("traces", b"c", 3)], go)
    go.set()
    # the thread queues within the linger (seconds, so a slow machine still makes it)
    got = q.take(max_spans=6, max_bytes=1 << 20, timeout=1.0, linger=30.0)
    th.join()
    assert [i.payload for i in got] == [b"a", b"b", b"c"]


def test_a_full_batch_ends_the_linger_before_its_time():
    q = SendQueue(1000)
    for p in (b"a", b"b"):
        q.reserve(5)
        q.put(Item("traces", p, 5))
    done = []
    th = threading.Thread(target=lambda: done.append(q.take(max_spans=10, max_bytes=1 << 20, timeout=1.0,
                                                             linger=600.0)))
    th.start()
    th.join(timeout=60)
    assert not th.is_alive() and [i.payload for i in done[0]] == [b"a", b"b"]


def test_closing_ends_the_linger_with_what_is_queued():
    q = SendQueue(1000)
    q.reserve(1)
    q.put(Item("traces", b"a", 1))
    done = []
    th = threading.Thread(target=lambda: done.append(q.take(100, 1 << 20, timeout=1.0, linger=600.0)))
    th.start()
    q.close()
    th.join(timeout=60)
    assert not th.is_alive() and [i.payload for i in done[0]] == [b"a"]


def test_two_lingering_workers_never_take_the_same_items():
    q = SendQueue(1000)
    q.reserve(1)
    q.put(Item("traces", b"a", 1))
    taken: list[list[Item]] = []
    workers = [threading.Thread(target=lambda: taken.append(q.take(100, 1 << 20, timeout=0.5, linger=0.2)))
               for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=60)
    assert sorted(len(t) for t in taken) == [0, 1]


def test_a_lingering_worker_is_woken_when_its_batch_is_full_not_by_every_item_put():
    q = SendQueue(1000)
    q.reserve(1)
    q.put(Item("traces", b"0", 1))
    wakes = []
    wait = q._cv.wait  # noqa: SLF001 (how often the worker's wait returned is what this is about)

    def counted(timeout=None):
        try:
            return wait(timeout)
        finally:
            wakes.append(timeout)

    q._cv.wait = counted  # noqa: SLF001
    done = []
    th = threading.Thread(target=lambda: done.append(q.take(max_spans=10, max_bytes=1 << 20, timeout=1.0,
                                                             linger=600.0)))
    th.start()
    while q._full_spans != 10:  # noqa: SLF001 (set under the lock the worker's wait gives up)
        threading.Event().wait(0.01)
    for n in range(1, 10):
        q.reserve(1)
        q.put(Item("traces", str(n).encode(), 1))
        threading.Event().wait(0.01)  # room for a woken worker to run (and be counted)
    th.join(timeout=60)
    assert not th.is_alive() and len(done[0]) == 10
    assert len(wakes) == 1  # by the tenth item, which filled the batch
