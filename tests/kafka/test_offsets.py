"""The commit rule without a broker: an offset is committable only once every message at
or below it is decided and exported, whatever order things finish in; and the lease."""
from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from faultgate_stream.export.spans.queue import Item, SendQueue
from faultgate_stream.receive.kafka import lease
from faultgate_stream.receive.kafka.lease import Lease
from faultgate_stream.receive.kafka.offsets import OffsetTracker
from faultgate_stream.receive.kafka.replay import ReplayLedger

TP = ("otlp_spans", 0)


class FakeProgress:
    """Runs in flight as a set of trace ids; export as a real SendQueue."""

    def __init__(self) -> None:
        self.in_flight: set[str] = set()
        self.queue = SendQueue(1000)

    def undecided(self, trace_ids) -> bool:
        return any(t in self.in_flight for t in trace_ids)

    def export_mark(self) -> int:
        return self.queue.mark()

    def exported(self, mark: int) -> bool:
        return self.queue.passed(mark)

    def drop(self, trace_ids) -> int:
        return 0


def test_the_safe_offset_stops_at_the_first_message_with_a_run_in_flight():
    t, p = OffsetTracker(), FakeProgress()
    p.in_flight = {"b"}
    for offset, trace in ((10, "a"), (11, "b"), (12, "c")):
        t.read(TP, offset, [trace])
    t.advance(p)
    assert t.log(TP).safe_offset() == 11   # 10 is finished; 12 is, but 11 is not
    p.in_flight.clear()
    t.advance(p)
    assert t.log(TP).safe_offset() == 13 and t.pending == 0


def test_a_decided_message_waits_for_what_its_verdict_queued_for_export():
    t, p = OffsetTracker(), FakeProgress()
    p.in_flight = {"a"}
    t.read(TP, 0, ["a"])
    t.advance(p)
    # the verdict: the root goes to the queue as the assembler lets the trace go
    p.queue.reserve(1)
    root = Item("traces", b"root", 1)
    p.queue.put(root)
    p.in_flight.clear()
    t.advance(p)
    assert t.log(TP).safe_offset() == 0    # decided, but its root has not left
    taken = p.queue.take(10, 10**6, timeout=0)
    assert taken == [root]
    t.advance(p)
    assert t.log(TP).safe_offset() == 0    # being sent is not sent
    p.queue.done(1, taken)
    t.advance(p)
    assert t.log(TP).safe_offset() == 1


def test_export_marks_hold_until_every_earlier_item_is_done_in_any_order():
    q = SendQueue(100)
    items = [Item("traces", bytes([i]), 1) for i in range(3)]
    for i in items:
        q.reserve(1)
        q.put(i)
    mark = q.mark()
    first, second = q.take(1, 10**6, 0), q.take(1, 10**6, 0)
    q.done(1, second)              # a later item finishes first
    assert not q.passed(mark)
    q.done(1, first)
    assert not q.passed(mark)      # the third is still queued
    q.done(1, q.take(1, 10**6, 0))
    assert q.passed(mark)


def test_a_rejected_message_has_no_traces_and_finishes_at_once():
    t, p = OffsetTracker(), FakeProgress()
    t.read(TP, 5, [])
    t.advance(p)
    assert t.log(TP).safe_offset() == 6


def test_removing_a_partition_returns_what_was_pending_for_the_handover():
    t, p = OffsetTracker(), FakeProgress()
    p.in_flight = {"x"}
    t.read(TP, 3, ["x"])
    t.read(("otlp_spans", 1), 0, ["y"])
    t.advance(p)
    log = t.remove(TP)
    assert log.traces() == {"x"} and log.safe_offset() == 3 and t.pending == 0


def test_the_lease_round_trips_through_commit_metadata_and_ignores_foreign_metadata():
    assert lease.decode(lease.encode(1234)) == 1234
    assert lease.decode("") is None and lease.decode(None) is None and lease.decode("someone else's") is None


def test_a_new_lease_never_falls_below_what_an_earlier_owner_read():
    inherited = Lease(replay_below=5000)
    assert inherited.extended(100, 200) == 5000    # a second crash still counts the first one's re-reads
    assert inherited.replayed(4999) and not inherited.replayed(5000)
    assert Lease(replay_below=0).extended(100, 200) == 300
    assert Lease(replay_below=-1, unknown=True).replayed(10**9)


class _Counter:
    def __init__(self) -> None:
        self.n = 0

    def inc(self) -> None:
        self.n += 1


def test_replayed_verdicts_are_those_of_traces_re_read_and_not_yet_finished():
    from faultgate_stream.model.records import RunKey

    c = _Counter()
    ledger = ReplayLedger(c)
    ledger.add(["t1", "t2"])

    class V:
        def __init__(self, tid: str, revision: int = 0) -> None:
            self.key = RunKey(tid, "r")
            self.revision = revision

    ledger.verdict(V("t1"))
    ledger.verdict(V("t1", revision=1))  # an amendment of a run already counted is not a replay
    ledger.verdict(V("t3"))
    ledger.forget(["t1", "t2"])
    ledger.verdict(V("t1"))
    assert c.n == 1 and len(ledger) == 0


def test_the_example_kafka_config_loads_as_shipped():
    from pathlib import Path

    from faultgate_stream.config import load

    root = Path(__file__).resolve().parents[2]
    cfg = load(root / "examples" / "kafka" / "faultgate.yaml")
    assert cfg.receive.kafka.enabled and cfg.receive.kafka.topic == "otlp_spans"
    assert load(root / "examples" / "config.yaml").receive.kafka.enabled is False


def test_the_commit_point_never_cuts_through_a_trace():
    """A run's tools in one message, its root in a later one, another run's message in
    between still in flight: committing between the two would make a new owner re-read
    the root alone and decide the run again on that part."""
    t, p = OffsetTracker(), FakeProgress()
    p.in_flight = {"u"}
    for offset, trace in ((0, "a"), (1, "t"), (2, "u"), (3, "t")):
        t.read(TP, offset, [trace])
    t.advance(p)
    assert t.log(TP).safe_offset() == 1   # "t" is decided, but its root message 3 is past "u"
    p.in_flight.clear()
    t.advance(p)
    assert t.log(TP).safe_offset() == 4 and t.pending == 0 and t.log(TP).last_of == {}


def test_the_commit_point_never_cuts_a_trace_behind_the_first_message_it_cannot_pass():
    """The CI failure of 118bd8d: "a" and "b" are decided, "a" wholly before the first
    unfinished message (4), "b" with a message past it. Committing at 1 (before b's
    first message, the first head that could not go) would cut "a" between its tools (0)
    and its root (2); the only cut that splits no trace is the old head."""
    t, p = OffsetTracker(), FakeProgress()
    p.in_flight = {"c"}
    for offset, trace in ((0, "a"), (1, "b"), (2, "a"), (3, "b"), (4, "c"), (5, "b")):
        t.read(TP, offset, [trace])
    t.advance(p)
    assert t.log(TP).safe_offset() == 0
    p.in_flight.clear()
    t.advance(p)
    assert t.log(TP).safe_offset() == 6 and t.pending == 0


def test_a_cut_between_whole_traces_is_taken_even_when_a_later_trace_straddles_the_limit():
    t, p = OffsetTracker(), FakeProgress()
    p.in_flight = {"c"}
    for offset, trace in ((0, "a"), (1, "a"), (2, "b"), (3, "c"), (4, "b")):
        t.read(TP, offset, [trace])
    t.advance(p)
    assert t.log(TP).safe_offset() == 2   # "a" is wholly behind; "b" goes on past "c"


def test_decided_messages_finish_together_while_later_verdicts_keep_the_queue_busy():
    """Under steady load, something is always queued for export. Each decided message's
    mark must be taken once it is decided, not when the messages before it have gone;
    otherwise every call finished one message and the commit crawled at one message per
    commit interval (the kafka join test's 0 s handover re-read ~9 s of runs)."""
    t, p = OffsetTracker(), FakeProgress()
    for offset in range(5):
        t.read(TP, offset, [f"t{offset}"])
    p.queue.reserve(1)
    p.queue.put(Item("traces", b"verdicts of t0..t4", 1))
    t.advance(p)
    assert t.log(TP).safe_offset() == 0
    p.queue.done(1, p.queue.take(10, 10**6, timeout=0))
    p.queue.reserve(1)
    p.queue.put(Item("traces", b"a later run's verdict", 1))   # queued after t0..t4 were decided
    t.advance(p)
    assert t.log(TP).safe_offset() == 5 and t.pending == 0


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sets(st.sampled_from("abcd"), max_size=2), min_size=1, max_size=12),
       st.sets(st.sampled_from("abcd"), max_size=2), st.booleans())
@example([{"a"}, {"b"}, {"a"}, {"c"}, {"b"}], {"c"}, False)   # the cut 118bd8d made
def test_no_commit_point_splits_a_trace_or_passes_an_unfinished_message(messages, in_flight, export_busy):
    """Any log of messages (each with some traces; rejected ones with none), some traces
    in flight, the export queue busy or not: what is committed leaves every trace read
    wholly on one side, nothing in flight below it, and nothing not yet exported."""
    t, p = OffsetTracker(), FakeProgress()
    p.in_flight = set(in_flight)
    for offset, traces in enumerate(messages):
        t.read(TP, offset, traces)
    if export_busy:   # queued before any mark is taken: no message's verdicts have left
        p.queue.reserve(1)
        p.queue.put(Item("traces", b"x", 1))
    t.advance(p)
    safe = t.log(TP).safe_offset()
    for trace in "abcd":
        offsets = [o for o, traces in enumerate(messages) if trace in traces]
        assert all(o < safe for o in offsets) or all(o >= safe for o in offsets), (trace, offsets, safe)
        if trace in in_flight:
            assert all(o >= safe for o in offsets)
    assert safe == 0 or not export_busy
    # and it is not needlessly short: with nothing in flight or queued, everything goes
    if not in_flight and not export_busy:
        assert safe == len(messages) and t.pending == 0
