"""The compact decision cache: what it answers about decided traces in either form (packed
records for OTLP's hex ids, maps for other ids or large traces), its two bounds, and that
it gives the garbage collector nothing to walk (it is compiled: native/py/src/assemble/)."""
from __future__ import annotations

import gc

from faultgate_stream.assemble.assembler import Assembler
from faultgate_stream.assemble.config import AssembleConfig
from faultgate_stream._native import DECISION_CACHE_PACKED_MAX as PACKED_MAX
from faultgate_stream._native import DecisionCache
from faultgate_stream.model.clock import ManualClock
from faultgate_stream.model.records import RunKey
from faultgate_stream.pipeline import RunList
from faultgate_stream.testing import agent, span, tool, trace_id


class _Late(RunList):
    def __init__(self) -> None:
        super().__init__()
        self.late: list[tuple[str, RunKey]] = []

    def span_late(self, s, decided):
        self.late.append((s.span_id, decided))


def _decide(asm: Assembler, clock: ManualClock, spans) -> None:
    asm.add(spans)
    clock.advance(1)
    asm.advance()


def test_a_decided_trace_is_packed_and_still_tells_late_spans_from_retries():
    clock, sink = ManualClock(10**18), _Late()
    asm = Assembler(sink, clock, AssembleConfig(root_grace=0.5))
    t = trace_id()
    root = agent(t)
    child = tool(t, root.span_id, "search")
    _decide(asm, clock, [child, root])
    table = asm._table  # noqa: SLF001 (the form is what this test is about)
    assert table.decided_form(t) == "packed" and not gc.is_tracked(table)
    straggler = tool(t, child.span_id, "fetch")  # its parent was decided: late for that run
    res = asm.add([root, child, straggler])
    assert (res.accepted, res.duplicates, res.late) == (0, 2, 1)
    assert res.decided_duplicates == {root.span_id: RunKey(t, root.span_id), child.span_id: RunKey(t, root.span_id)}
    assert sink.late == [(straggler.span_id, RunKey(t, root.span_id))]
    grandchild = tool(t, straggler.span_id, "deeper")  # under the late span: late too
    assert asm.add([grandchild]).late == 1
    assert asm.add([straggler]).duplicates == 1  # the late span's retry
    assert asm.traces_in_flight == 0


def test_a_parent_that_never_arrived_is_late_for_the_run_that_named_it():
    clock, sink = ManualClock(10**18), _Late()
    asm = Assembler(sink, clock, AssembleConfig(root_grace=0.5, idle_timeout=2))
    t = trace_id()
    lost = agent(t)  # not sent: the fragment closes as an orphan run
    orphan = tool(t, lost.span_id, "search")
    asm.add([orphan])
    clock.advance(3)
    asm.advance()
    assert [r.key for r in sink.runs] == [RunKey(t, "")]
    assert asm.add([lost]).late == 1
    assert sink.late == [(lost.span_id, RunKey(t, ""))]


def test_ids_that_are_not_otlp_hex_are_kept_as_maps_and_answer_the_same():
    cache = DecisionCache(max_traces=10, max_bytes=10**6)
    root = agent("trace-1", sid="root-span")
    kid = span("trace-1", "step", parent="root-span", sid="KID")
    cache.decide("trace-1", [("root-span", [root, kid])])
    assert cache.form("trace-1") == "wide"
    assert cache.run_of("trace-1", "KID") == "root-span" and cache.run_of("trace-1", "nope") is None
    cache.late("trace-1", "LATE", "root-span")
    assert cache.run_of("trace-1", "LATE") == "root-span"


def test_a_packed_trace_that_outgrows_its_records_becomes_maps_without_forgetting():
    cache = DecisionCache(max_traces=10, max_bytes=10**8)
    t = trace_id()
    root = agent(t)
    cache.decide(t, [(root.span_id, [root])])
    late = [tool(t, root.span_id, f"t{i}") for i in range(PACKED_MAX + 5)]
    for s in late:
        assert cache.run_of(t, s.span_id) is None
        cache.late(t, s.span_id, root.span_id)
    assert cache.form(t) == "wide"
    assert all(cache.run_of(t, s.span_id) == root.span_id for s in [root, *late])


def test_both_bounds_evict_the_oldest_trace_and_count_it():
    cache = DecisionCache(max_traces=2, max_bytes=10**6)
    traces = [trace_id() for _ in range(3)]
    for t in traces:
        root = agent(t)
        cache.decide(t, [(root.span_id, [root])])
    assert cache.trace_ids() == traces[1:] and cache.evictions == 1
    one = cache.bytes // 2
    small = DecisionCache(max_traces=100, max_bytes=one + 1)
    for t in traces:
        root = agent(t)
        small.decide(t, [(root.span_id, [root])])
    assert len(small) == 1 and small.evictions == 2 and 0 < small.bytes <= one + 1


def test_an_eviction_inside_a_batch_is_counted_once():
    """Runs closed by max_spans_per_trace in the middle of a batch evict from the cache
    there; the batch's own count of evictions must not add them again."""
    clock = ManualClock(10**18)
    asm = Assembler(RunList(), clock, AssembleConfig(root_grace=0.5, max_spans_per_trace=2, decision_cache=1))
    batch = []
    for _ in range(2):
        t = trace_id()
        root = agent(t)
        batch += [root, tool(t, root.span_id, "search")]
    asm.add(batch)
    assert asm.decided_traces == 1 and asm.stats.decision_cache_evictions == 1


def test_a_packed_trace_of_many_runs_names_each_spans_own_root():
    """A packed trace keeps each run's root once and each record points at it: 250 runs of
    two spans each (more roots than a byte can count) still answer span by span."""
    cache = DecisionCache(max_traces=10, max_bytes=10**8)
    t = trace_id()
    runs = []
    for _ in range(250):
        root = agent(t)
        runs.append((root.span_id, [root, tool(t, root.span_id, "x")]))
    runs.append(("", [tool(t, "00000000000000aa", f"y{i}") for i in range(6)]))  # and an orphan run
    cache.decide(t, runs)
    assert cache.form(t) == "packed" and len(cache) == 1
    assert all(cache.run_of(t, s.span_id) == root for root, members in runs for s in members)
    assert cache.named_by(t, "00000000000000aa") == ""
    assert cache.bytes == 220 + 17 * 507  # as the packed Python form was counted
