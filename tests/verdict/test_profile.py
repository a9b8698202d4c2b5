"""A run's profile (verdict/profile.py): its shape from its steps, its session from the
root (else its spans), the end flag, the task folded, the monotonic attributes."""
from __future__ import annotations

from faultgate_stream.pipeline import assemble_runs
from faultgate_stream.testing import agent, simple_run, tool, trace_id
from faultgate_stream.verdict.profile import Profiler, task_of


def _run(spans):
    (run,) = assemble_runs(spans)
    return run


def test_the_shape_counts_failed_calls_and_retries_of_the_same_tool_after_a_failure():
    t = trace_id()
    root = agent(t, prompt="Refund order 7", answer="Done.", end_s=9.0, gen_ai__usage__input_tokens=2500,
                 gen_ai__usage__output_tokens=600)
    spans = [root,
             tool(t, root.span_id, "lookup", {"id": 7}, {"error": "timeout"}, start_s=1.0),   # an error result
             tool(t, root.span_id, "lookup", {"id": 7}, {"ok": True}, start_s=2.0),           # its retry
             tool(t, root.span_id, "refund", {"id": 7}, "", start_s=3.0, status=2),           # failed span
             tool(t, root.span_id, "lookup", {"id": 8}, {"ok": True}, start_s=4.0)]           # not a retry of refund
    p = Profiler()(_run(spans))
    assert p.shape == ("lookup>refund>lookup", "4-7", "2", "1", "2k-4k")
    assert p.answered and p.task == task_of("refund   ORDER 7 ")


def test_the_session_end_flag_and_monotonic_attributes_come_from_the_root_else_the_first_span_that_has_them():
    spans = simple_run([("search", {"q": 1}, "found")], gen_ai__conversation__id="conv-9",
                       faultgate__session__end="true")
    spans[1] = spans[1]._replace(attrs={**spans[1].attrs, "order.stage": 4, "session.id": "  "})
    p = Profiler(monotonic=("order.stage", "absent"))(_run(spans))
    assert (p.session, p.session_end, p.attrs) == ("conv-9", True, (("order.stage", 4.0),))
    # session.id wins over the conversation id wherever it is; no tokens recorded: no bucket
    spans[1] = spans[1]._replace(attrs={**spans[1].attrs, "session.id": "S-1"})
    p = Profiler()(_run(spans))
    assert p.session == "S-1" and p.shape[-1] == "" and Profiler().attributes >= {"session.id",
                                                                                  "faultgate.session.end"}


def test_a_run_without_a_prompt_has_no_task_and_without_an_answer_did_not_answer():
    p = Profiler()(_run(simple_run([], prompt="", answer="")))
    assert (p.task, p.answered, p.session, p.session_end) == ("", False, "", False)
    assert p.shape == ("(none)", "0", "0", "0", "")
