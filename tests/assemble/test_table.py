"""The compiled trace table against the Python assembler it replaced (``tests/assemble/oracle``):
for any spans, in any arrival order and batching, with loops, missing parents, nested
agents, duplicates, late spans, content records, odd ids and odd times, under any bounds,
both give the same runs (members, roots, completions, times, outside spans), the same
late spans and duplicates, in the same order, with the same counters and gauges."""
from __future__ import annotations

import gc

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultgate_stream import _native
from faultgate_stream.assemble.assembler import Assembler
from faultgate_stream.assemble.config import AssembleConfig
from faultgate_stream.model.clock import ManualClock
from faultgate_stream.model.errors import BoundError, CapacityError
from faultgate_stream.model.records import INVOKE_AGENT, SpanRecord
from faultgate_stream.model.verdict import Completion
from faultgate_stream.testing import agent, span
from tests.assemble.oracle.assembler import Assembler as OracleAssembler
from tests.assemble.oracle.partition import partition as oracle_partition

NS = 1_000_000_000
START = 1_000 * NS


class Log:
    """A ``RunConsumer`` that writes down everything it hears, in order, comparably."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def span_arrived(self, s: SpanRecord) -> None:  # the oracle's form
        self.events.append(("arrived", s.trace_id, s.span_id))

    def spans_arrived(self, spans: list[SpanRecord]) -> None:
        assert spans, "an empty batch of arrivals is not worth a call"
        for s in spans:
            self.span_arrived(s)

    def span_late(self, s: SpanRecord, decided) -> None:
        self.events.append(("late", s.span_id, tuple(decided)))

    def run_completed(self, run) -> None:
        self.events.append(("run", tuple(run.key), run.spans, run.root, run.root is None or any(
            s is run.root for s in run.spans), run.completion, run.root_arrival_ns, run.closed_ns,
            sorted(run.outside_span_ids)))


def _state(asm) -> tuple:
    s = asm.stats
    return (tuple(getattr(s, a) for a in type(s).__slots__), asm.traces_in_flight, asm.spans_in_flight,
            asm.bytes_held, asm.decided_traces, asm.decided_bytes, asm.due_ns)


def _outcome(call):
    try:
        res = call()
    except (BoundError, CapacityError) as e:
        return ("refused", type(e).__name__, str(e), e.bound)
    if res is None or isinstance(res, int):
        return res
    return tuple((a, getattr(res, a)) for a in type(res).__slots__)


# ------------------------------------------------------------------ generated input
HEX = "0123456789abcdef"
trace_ids = st.one_of(st.text(HEX, min_size=32, max_size=32), st.sampled_from(["trace-a", "T", "ABCDEF" * 5 + "AB"]))
span_ids = st.one_of(st.text(HEX, min_size=16, max_size=16), st.just("0" * 16),
                     st.sampled_from(["s1", "s2", "root", "ABCDEF0123456789", "é"]))
times = st.one_of(st.integers(0, 50).map(lambda n: START + n * NS // 10), st.just(0),
                  st.sampled_from([2**64 + 5, 2**80, -3, 1.5]))


@st.composite
def traces(draw, n_traces=st.integers(1, 3), n_spans=st.integers(1, 9)):
    """Spans of a few traces whose parents are others of their trace, themselves, missing
    or absent; some agents, some not; odd ids and times now and then."""
    out = []
    for _ in range(draw(n_traces)):
        t = draw(trace_ids)
        ids = draw(st.lists(span_ids, min_size=1, max_size=draw(n_spans), unique=True))
        for sid in ids:
            parent = draw(st.one_of(st.none(), st.just(""), st.sampled_from(ids), span_ids))
            op = draw(st.sampled_from([INVOKE_AGENT, INVOKE_AGENT, "chat", "execute_tool", "create_agent", None]))
            start = draw(times)
            end = draw(st.one_of(st.just(0), times))
            rec = span(t, "s", sid=sid, parent=parent)._replace(
                operation=op, start_ns=start, end_ns=end, size=draw(st.integers(0, 300)))
            out.append(rec)
    return out


@st.composite
def configs(draw):
    return AssembleConfig(
        root_grace=draw(st.sampled_from([0.0, 0.5, 2.0])), idle_timeout=draw(st.sampled_from([0.5, 3.0, 60.0])),
        max_run_duration=draw(st.sampled_from([1.0, 5.0, 600.0])),
        max_traces=draw(st.sampled_from([1, 2, 4, 1000])), max_spans_per_trace=draw(st.sampled_from([2, 4, 10_000])),
        max_bytes=draw(st.sampled_from([400, 2_000, 10**9])), on_full=draw(st.sampled_from(["refuse", "evict"])),
        decision_cache=draw(st.sampled_from([1, 3, 1000])), decision_cache_bytes=draw(st.sampled_from([300, 2_000, 10**9])))


def _content(s: SpanRecord, n: int) -> SpanRecord:
    return SpanRecord(s.trace_id, s.span_id, None, "gen_ai.content", s.start_ns if isinstance(s.start_ns, int) else 0,
                      prompt=f"said {n}", size=10 + n)


@st.composite
def scripts(draw):
    spans = draw(traces())
    ops = []
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["add", "add", "add", "advance", "contents", "drop"]))
        if kind == "add":
            ops.append(("add", draw(st.lists(st.sampled_from(spans), max_size=8))))
        elif kind == "advance":
            ops.append(("advance", draw(st.sampled_from([0.0, 0.3, 1.0, 2.5, 70.0, 700.0]))))
        elif kind == "contents":
            ops.append(("contents", [_content(s, draw(st.integers(0, 2)))
                                     for s in draw(st.lists(st.sampled_from(spans), max_size=3))]))
        else:
            ops.append(("drop", sorted({s.trace_id for s in draw(st.lists(st.sampled_from(spans), max_size=1))})))
    end = draw(st.sampled_from([Completion.COMPLETE, Completion.SHUTDOWN]))
    return spans, ops, end, draw(st.booleans())


def _play(cls, cfg: AssembleConfig, spans, ops, end, remember) -> tuple[list, list]:
    clock = ManualClock(START)
    log = Log()
    asm = cls(log, clock, cfg)
    outcomes = []
    for op, arg in ops:
        if op == "add":
            outcomes.append(_outcome(lambda: asm.add(list(arg))))
        elif op == "contents":
            outcomes.append(_outcome(lambda: asm.add_contents(list(arg))))
        elif op == "advance":
            clock.advance(arg)
            outcomes.append(_outcome(asm.advance))
        else:
            outcomes.append(_outcome(lambda: asm.drop_traces(arg)))
        outcomes.append(_state(asm))
        outcomes.append(asm.holds_any(sorted({s.trace_id for s in spans})))
    outcomes.append(_outcome(lambda: asm.close_all(end, remember=remember)))
    outcomes.append(_state(asm))
    return log.events, outcomes


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(script=scripts(), cfg=configs())
def test_the_table_does_what_the_python_assembler_did(script, cfg):
    spans, ops, end, remember = script
    assert _play(Assembler, cfg, *script) == _play(OracleAssembler, cfg, *script)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spans=traces(n_traces=st.just(1), n_spans=st.integers(1, 30)), rnd=st.randoms(use_true_random=False))
def test_a_trace_closed_whole_is_partitioned_as_the_python_partition_did(spans, rnd):
    """Any arrival order: the runs are the oracle's partition of the spans held."""
    rnd.shuffle(spans)
    log = Log()
    asm = Assembler(log, ManualClock(START), AssembleConfig(max_bytes=10**9))
    asm.add(spans)
    held = {}
    for s in spans:
        held.setdefault(s.span_id, s)
    p = oracle_partition(held)
    asm.close_all()
    runs = {key[1]: members for _, key, members, *_ in (e for e in log.events if e[0] == "run")}
    expected = {root: tuple(sorted(members, key=lambda s: (s.start_ns, s.span_id))) for root, members in p.runs.items()}
    if p.unattached or (p.outside and not p.runs):
        expected[""] = tuple(sorted(p.unattached or p.outside, key=lambda s: (s.start_ns, s.span_id)))
    assert runs == expected


def test_spans_whose_times_python_must_compare_are_adopted_as_the_python_partition_did():
    """Times past 64 bits or not ints at all (no reader makes them, but a record may hold
    them) are compared by Python, so a root's window adopts what it adopted before."""
    t = "f" * 32
    root = agent(t)._replace(start_ns=10, end_ns=2**70)
    kids = [span(t, "k", parent="0" * 15 + "9")._replace(start_ns=v, end_ns=0) for v in (2**65, 1.5, 5, 2**71)]
    script = ([root, *kids], [("add", [root, *kids])], Completion.COMPLETE, True)
    events, _ = _play(Assembler, AssembleConfig(), *script)
    assert events == _play(OracleAssembler, AssembleConfig(), *script)[0]
    runs = [e for e in events if e[0] == "run"]
    # the root's window (10 to 2**70) holds one; the rest are an orphan run, listed first (1.5)
    assert [sorted(s.start_ns for s in r[2]) for r in runs] == [[1.5, 5, 2**71], [10, 2**65]]


def test_the_table_is_outside_the_collectors_reach():
    """The decision cache and the traces in flight are Rust values: the collector has no
    object to track for them (the records in flight are the spans' own)."""
    asm = Assembler(Log(), ManualClock(START), AssembleConfig())
    assert not gc.is_tracked(asm._table)  # noqa: SLF001
    assert not gc.is_tracked(_native.DecisionCache(1, 1))


def test_a_record_that_is_not_a_span_is_refused_and_nothing_is_taken():
    asm = Assembler(Log(), ManualClock(START), AssembleConfig())
    good = agent("a" * 32)
    for bad in ([good, ("not", "a", "record")], [good, good._replace(span_id=7)], [good, good._replace(size="big")]):
        try:
            asm.add(bad)
        except TypeError:
            pass
        else:
            raise AssertionError(f"{bad[1]!r} was taken")
        assert asm.spans_in_flight == 0 and asm.traces_in_flight == 0


def test_record_field_positions_are_those_the_table_reads():
    # native/py/src/assemble/table.rs reads these by position
    assert SpanRecord._fields.index("trace_id") == 0 and SpanRecord._fields.index("span_id") == 1
    assert SpanRecord._fields.index("parent_id") == 2 and SpanRecord._fields.index("start_ns") == 4
    assert SpanRecord._fields.index("end_ns") == 5 and SpanRecord._fields.index("operation") == 8
    assert SpanRecord._fields.index("size") == 17
