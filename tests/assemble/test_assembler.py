"""The assembler's live semantics, on a manual clock."""
from __future__ import annotations

import pytest

from faultgate_stream.assemble.assembler import Assembler
from faultgate_stream.assemble.config import AssembleConfig
from faultgate_stream.model.clock import ManualClock
from faultgate_stream.model.errors import CapacityError
from faultgate_stream.model.records import RunKey
from faultgate_stream.model.verdict import Completion
from faultgate_stream.pipeline import RunList
from faultgate_stream.testing import agent, span, tool, trace_id


class Recorder(RunList):
    def __init__(self) -> None:
        super().__init__()
        self.arrived: list[str] = []
        self.late: list[tuple[str, RunKey]] = []

    def span_arrived(self, s):
        self.arrived.append(s.span_id)

    def span_late(self, s, decided):
        self.late.append((s.span_id, decided))


def make(**cfg):
    clock = ManualClock(1_000 * 10**9)
    sink = Recorder()
    return Assembler(sink, clock, AssembleConfig(**cfg)), sink, clock


def test_a_run_completes_only_after_root_grace_has_passed_since_the_root_arrived():
    asm, sink, clock = make(root_grace=2.0)
    t = trace_id()
    root = agent(t)
    asm.add([tool(t, root.span_id, "search")])
    clock.advance(5)
    asm.advance()
    assert sink.runs == []  # no root yet: children wait for it
    asm.add([root])
    clock.advance(1.9)
    asm.advance()
    assert sink.runs == []
    clock.advance(0.2)
    asm.advance()
    assert [r.key for r in sink.runs] == [RunKey(t, root.span_id)]
    assert sink.runs[0].completion is Completion.GRACE
    assert len(sink.runs[0].spans) == 2
    assert asm.traces_in_flight == 0


def test_max_run_duration_closes_a_run_whose_root_never_arrives():
    asm, sink, clock = make(max_run_duration=30, idle_timeout=1000)
    t = trace_id()
    root = agent(t)
    asm.add([tool(t, root.span_id, "search")])
    clock.advance(29)
    asm.add([tool(t, root.span_id, "search", start_s=2)])  # keeps it from being idle
    asm.advance()
    assert sink.runs == []
    clock.advance(1)
    asm.advance()
    assert [r.completion for r in sink.runs] == [Completion.MAX_DURATION]
    assert sink.runs[0].root is None and len(sink.runs[0].spans) == 2


def test_a_fragment_with_no_root_is_closed_as_an_orphan_after_idle_timeout():
    asm, sink, clock = make(idle_timeout=10)
    t = trace_id()
    asm.add([tool(t, "00000000000000aa", "search")])
    clock.advance(9)
    asm.advance()
    assert sink.runs == []
    clock.advance(1)
    asm.advance()
    assert [(r.key, r.completion) for r in sink.runs] == [(RunKey(t, ""), Completion.ORPHAN)]


def test_duplicate_spans_are_dropped_and_counted():
    asm, sink, clock = make()
    t = trace_id()
    root = agent(t)
    child = tool(t, root.span_id, "search")
    assert asm.add([root, child]).accepted == 2
    res = asm.add([child, root])
    assert (res.accepted, res.duplicates) == (0, 2)
    assert sink.arrived == [root.span_id, child.span_id]
    assert asm.stats.duplicates == 2


def test_a_span_after_the_verdict_is_late_and_names_the_decided_run():
    asm, sink, clock = make(root_grace=1)
    t = trace_id()
    root = agent(t)
    asm.add([root])
    clock.advance(2)
    asm.advance()
    straggler = tool(t, root.span_id, "search")
    res = asm.add([straggler, root])
    assert (res.late, res.duplicates, res.accepted) == (1, 1, 0)
    assert sink.late == [(straggler.span_id, RunKey(t, root.span_id))]
    assert len(sink.runs) == 1 and asm.traces_in_flight == 0


def test_a_trace_with_two_top_level_agents_gives_two_runs_and_a_nested_agent_stays_inside():
    asm, sink, clock = make()
    t = trace_id()
    http = span(t, "POST /chat")
    a = agent(t, name="planner", parent=http.span_id)
    sub = agent(t, name="researcher", parent=a.span_id)
    b = agent(t, name="writer", parent=http.span_id, start_s=20)
    spans = [http, a, sub, tool(t, sub.span_id, "search"), b, tool(t, b.span_id, "write", start_s=21)]
    asm.add(spans)
    asm.close_all()
    runs = {r.key.root_span_id: r for r in sink.runs}
    assert set(runs) == {a.span_id, b.span_id}
    assert {s.span_id for s in runs[a.span_id].spans} == {a.span_id, sub.span_id, spans[3].span_id}
    assert runs[a.span_id].agent == "planner" and runs[b.span_id].agent == "writer"
    assert asm.traces_in_flight == 0  # the HTTP span above both left with them


def test_a_span_above_the_agent_whose_own_parent_never_came_is_outside_the_run_not_an_orphan_run():
    """The OpenAI Agents SDK for JavaScript ends no trace whose run threw (max turns), so
    OpenInference's processor never sends the trace's root span: the workflow span between
    it and the agent (in error, starting a millisecond before the agent) was a second,
    orphan run whose span error fired unrecovered_tool_error."""
    asm, sink, _ = make()
    t = trace_id()
    workflow = span(t, "Agent workflow", parent="f" * 16, start_s=0.0, end_s=12.0, status=2,
                    message="Error in agent run: MaxTurnsExceededError: Max turns (12) exceeded")
    a = agent(t, name="assistant", parent=workflow.span_id, start_s=0.001, end_s=11.9)
    asm.add([workflow, a, tool(t, a.span_id, "search_docs")])
    asm.close_all()
    assert [(r.key.root_span_id, r.completion.value, len(r.spans)) for r in sink.runs] == [(a.span_id, "complete", 2)]
    assert workflow.span_id in sink.runs[0].outside_span_ids and asm.traces_in_flight == 0


def test_a_trace_without_invoke_agent_is_one_run_under_its_parentless_span():
    asm, sink, _ = make()
    t = trace_id()
    root = span(t, "workflow")
    asm.add([root, tool(t, root.span_id, "a"), tool(t, root.span_id, "b", start_s=2)])
    asm.close_all()
    assert [(r.key.root_span_id, len(r.steps)) for r in sink.runs] == [(root.span_id, 2)]


def test_steps_are_ordered_by_start_time_whatever_order_spans_arrive_in():
    asm, sink, _ = make()
    t = trace_id()
    root = agent(t)
    later, earlier = tool(t, root.span_id, "second", start_s=5), tool(t, root.span_id, "first", start_s=1)
    asm.add([later])
    asm.add([root, earlier])
    asm.close_all()
    assert [s.tool for s in sink.runs[0].steps] == ["first", "second"]
    assert [s.index for s in sink.runs[0].steps] == [1, 2]


def test_at_max_traces_a_batch_is_refused_whole_and_retryably():
    asm, sink, _ = make(max_traces=1)
    t1, t2 = trace_id(), trace_id()
    asm.add([agent(t1)])
    r2 = agent(t2)
    with pytest.raises(CapacityError) as e:
        asm.add([tool(t1, "00000000000000aa", "x"), r2])
    assert e.value.bound == "max_traces" and e.value.retry_after_s > 0
    assert sink.arrived and len(sink.arrived) == 1  # nothing of the refused batch was taken
    assert asm.stats.refused_batches == 1


def test_with_evict_the_oldest_run_is_closed_early_to_make_room():
    asm, sink, _ = make(max_traces=1, on_full="evict")
    t1, t2 = trace_id(), trace_id()
    first = agent(t1)
    asm.add([first])
    asm.add([agent(t2)])
    assert [(r.key.trace_id, r.completion) for r in sink.runs] == [(t1, Completion.EVICTED)]
    assert asm.stats.evicted_runs == 1 and asm.traces_in_flight == 1


def test_a_run_that_reaches_max_spans_is_closed_early_and_later_spans_are_late():
    asm, sink, _ = make(max_spans_per_trace=3)
    t = trace_id()
    root = agent(t)
    asm.add([root, tool(t, root.span_id, "a"), tool(t, root.span_id, "b")])
    assert [r.completion for r in sink.runs] == [Completion.EVICTED]
    assert asm.add([tool(t, root.span_id, "c")]).late == 1
    assert asm.stats.span_cap_hits == 1


def test_bytes_held_return_to_zero_when_every_run_is_done():
    asm, sink, clock = make(root_grace=0)
    t = trace_id()
    root = agent(t)
    asm.add([root, tool(t, root.span_id, "a")])
    assert asm.bytes_held > 0 and asm.spans_in_flight == 2
    clock.advance(0.001)
    asm.advance()
    assert asm.bytes_held == 0 and asm.spans_in_flight == 0


def test_the_decision_cache_is_bounded_and_counts_what_it_forgets():
    asm, sink, _ = make(decision_cache=2)
    for _ in range(3):
        asm.add([agent(trace_id())])
        asm.close_all()
    assert asm.stats.decision_cache_evictions == 1


def test_invalid_config_names_every_bad_key():
    problems = AssembleConfig(root_grace=-1, max_traces=0, on_full="drop").validate()  # type: ignore[arg-type]
    assert any(p.startswith("root_grace") for p in problems)
    assert any(p.startswith("max_traces") for p in problems)
    assert any(p.startswith("on_full") for p in problems)


def test_a_span_above_the_agent_does_not_make_the_scan_repartition_its_trace_every_tick():
    asm, sink, clock = make(root_grace=1.0)
    t = trace_id()
    http = span(t, "POST /chat")                      # parentless, arrives first
    asm.add([http])
    clock.advance(2)
    asm.add([agent(t, parent=http.span_id)])          # the real root, not due yet
    for _ in range(5):
        clock.advance(0.1)
        asm.advance()
    assert asm._table.partitions == 1 and sink.runs == []  # noqa: SLF001 (partitions are what this is about)
    clock.advance(1)
    asm.advance()
    assert len(sink.runs) == 1 and asm.traces_in_flight == 0


def test_closing_at_the_end_of_input_without_remembering_gives_the_same_runs_and_no_decisions():
    # check_spans closes a file's runs with remember=False: nothing can arrive late after
    # the end of the input, so the decision cache is not filled, and the runs are the same
    t = trace_id()
    root = agent(t)
    spans = [root, tool(t, root.span_id, "search"), tool(t, root.span_id, "open", start_s=2),
             span(trace_id(), "orphan", parent="00000000000000aa")]
    outcomes = []
    for remember in (True, False):
        asm, sink, _ = make()
        asm.add(spans)
        assert asm.close_all(remember=remember) == 2
        outcomes.append(([(r.key, [s.span_id for s in r.spans], r.completion) for r in sink.runs],
                         asm.traces_in_flight, asm.spans_in_flight, asm.bytes_held))
        assert asm.decided_traces == (2 if remember else 0)
    assert outcomes[0] == outcomes[1]


def test_a_completion_scan_looks_only_at_the_traces_that_are_due():
    """The scan ran over every trace in flight on every tick; the table keeps traces by
    deadline, so a scan with one run due among a thousand looks at that one."""
    asm, sink, clock = make(root_grace=2.0, idle_timeout=60)
    for _ in range(1000):
        t = trace_id()
        asm.add([tool(t, "00000000000000aa", "x")])  # fragments: due only when idle
    t = trace_id()
    asm.add([agent(t)])
    for _ in range(5):
        asm.advance()
    assert asm._table.scanned == 0  # noqa: SLF001 (what the scan touched is what this is about)
    clock.advance(2)
    assert asm.advance() == 1 and [r.key.trace_id for r in sink.runs] == [t]
    assert asm._table.scanned == 1  # noqa: SLF001
    assert asm.due_ns == 1_000 * 10**9 + 60 * 10**9  # the fragments' idle deadline, exactly
