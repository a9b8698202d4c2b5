"""The run's compiled facts equal the Python ones they replaced (tests/model/run_oracle.py),
on generated runs and on every recorded trace: steps field for field, prompt, answer,
agent, measures, what was not captured."""
from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings

from faultgate_stream import _native
from faultgate_stream.model.records import (
    MISSING_FINISH, MISSING_INPUT, MISSING_OUTPUT, MISSING_TOOL_ARGUMENTS, MISSING_TOOL_RESULT, ERROR_TYPE,
    RunKey, SpanRecord, Step, ToolCall, ToolExecution,
)
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import Completion
from tests.model.native_inputs import both, recorded_runs, runs
from tests.model.run_oracle import OracleRun

FACTS = ("steps", "prompt", "answer", "agent", "agent_version", "termination", "scenario", "usage_tokens",
         "latency_ms", "cost_usd", "missing", "has_content", "answer_not_captured", "calls_not_captured", "last_end_ns",
         "span_ids")
FLAGS = (MISSING_TOOL_ARGUMENTS, MISSING_TOOL_RESULT, MISSING_TOOL_ARGUMENTS | MISSING_TOOL_RESULT,
         MISSING_INPUT | MISSING_OUTPUT | MISSING_FINISH, 31)


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


def _facts_equal(new: Run, old: OracleRun) -> None:
    for name in FACTS:
        got, want = getattr(new, name), getattr(old, name)
        if name == "steps":
            assert [tuple(map(type, s)) for s in got] == [tuple(map(type, s)) for s in want]
            assert all(type(s) is Step for s in got)
        assert _same(got, want), (name, got, want)
    for flags in FLAGS:
        assert new.steps_not_captured(flags) == old.steps_not_captured(flags)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_generated_runs_have_the_facts_python_gave(run):
    spans, root = run
    new, old = both(spans, root)
    try:
        want = [getattr(old, n) for n in FACTS]
    except Exception as e:  # noqa: BLE001  (the same failure, if the Python raised)
        try:
            [getattr(new, n) for n in FACTS]
        except Exception as f:  # noqa: BLE001
            assert type(f) is type(e)
            return
        raise AssertionError(f"Python raised {e!r}, the compiled facts did not") from e
    assert want is not None
    _facts_equal(new, old)


def test_every_recorded_run_has_the_facts_python_gave():
    runs_ = recorded_runs()
    assert len(runs_) > 300
    for run in runs_:
        fresh = Run(run.key, list(run.spans), run.root, run.completion)
        _facts_equal(fresh, OracleRun(run.key, list(run.spans), run.root, run.completion))


def test_facts_are_computed_once_and_then_read_from_the_run():
    t = "t"
    tool = SpanRecord(t, "s1", None, "execute_tool x", 1, tool=ToolExecution("x", "{}", "ok", "c1"))
    run = Run(RunKey(t, "s1"), [tool], None, Completion.COMPLETE)
    steps = run.steps
    assert run.__dict__["steps"] is steps and run.steps is steps and "answer" in run.__dict__
    assert isinstance(Run.__dict__["steps"], _native.RunFact) and Run.steps is Run.__dict__["steps"]


def test_the_steps_become_python_objects_only_when_read_and_are_counted_without_them():
    t = "t"
    tools = [SpanRecord(t, f"s{i}", None, "execute_tool x", i, tool=ToolExecution("x", "{}", "ok", f"c{i}"))
             for i in range(3)]
    run = Run(RunKey(t, "s0"), tools, None, Completion.COMPLETE)
    assert run.agent and run.step_count == 3
    assert "agent" in run.__dict__ and "span_ids" in run.__dict__ and "steps" not in run.__dict__
    steps = run.steps  # read after the other facts: made then, the others kept as they were
    assert len(steps) == 3 and run.__dict__["steps"] is steps and run.step_count == 3
    hand = Run(RunKey(t, "s0"), tools, None, Completion.COMPLETE)
    hand.__dict__["steps"] = (Step(1, "get", "{}", "x", "s1"),)
    assert hand.step_count == 1  # steps set by hand are what is counted, as the checks read them


def test_steps_set_by_hand_are_kept_and_are_what_the_checks_read():
    run = Run(RunKey("t", "r"), [], None, Completion.COMPLETE)
    run.__dict__["steps"] = (Step(1, "get", '{"a": 1}', "x", "s1"),)
    assert run.answer == "" and run.steps[0].tool == "get"
    assert run.steps_not_captured(MISSING_TOOL_RESULT) == ""
    run.__dict__["steps"] = (Step(1, "get", "", "", "s1", missing=MISSING_TOOL_RESULT),)
    assert run.steps_not_captured(MISSING_TOOL_RESULT) == "tool results not captured on step(s) 1"


def test_a_chat_only_run_orders_the_calls_of_spans_sharing_start_and_id_by_their_place():
    a = SpanRecord("t", "m", None, "chat", 5, calls=(ToolCall("1", "x", "a0"), ToolCall("2", "x", "a1")))
    b = SpanRecord("t", "m", None, "chat", 5, calls=(ToolCall("3", "y", "b0"),))
    new, old = both([a, b], None)
    assert [s.arguments for s in new.steps] == [s.arguments for s in old.steps] == ["a0", "b0", "a1"]


def test_a_measure_too_large_for_any_machine_integer_is_added_as_python_adds_it():
    spans = [SpanRecord("t", str(i), None, "chat", i, attrs={"gen_ai.usage.input_tokens": 1e300}) for i in range(3)]
    new, old = both(spans, None)
    assert new.usage_tokens == old.usage_tokens == float(int(1e300) * 3)


def test_the_record_layout_the_compiled_facts_read_by_index():
    """native/py/src/records.rs reads the records by field index: their order is pinned."""
    assert SpanRecord._fields[1:19:1] == (
        "span_id", "parent_id", "name", "start_ns", "end_ns", "status_code", "status_message", "operation", "attrs",
        "prompt", "answer", "tool", "calls", "responses", "finish_reasons", "calls_shadowed_by_tool_spans", "size",
        "missing")
    assert ToolExecution._fields == ("name", "arguments", "result", "call_id")
    assert ToolCall._fields == ("call_id", "name", "arguments")
    assert Step._fields == ("index", "tool", "arguments", "result", "span_id", "call_id", "start_ns", "ok", "missing")
    assert ERROR_TYPE == "error.type"
