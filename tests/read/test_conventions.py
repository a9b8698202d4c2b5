"""Every convention reads to the same steps: GenAI old and new shapes, OpenInference, OpenLLMetry."""
from __future__ import annotations

import json

from faultgate_stream.checks.registry import select
from faultgate_stream.pipeline import assemble_runs, check_spans
from faultgate_stream.testing import agent, span, tool, trace_id


def _msgs(role, *parts):
    return json.dumps([{"role": role, "parts": list(parts)}])


def _one_run(spans):
    runs = assemble_runs(spans)
    assert len(runs) == 1
    return runs[0]


def test_a_chat_only_trace_has_its_steps_in_message_parts_with_results_under_response():
    t = trace_id()
    root = agent(t, prompt="find o-7", answer="found")
    call = span(t, "chat gpt", parent=root.span_id, start_s=1, attributes={
        "gen_ai.operation.name": "chat",
        "gen_ai.output.messages": _msgs("assistant", {"type": "tool_call", "id": "c1", "name": "lookup",
                                                      "arguments": {"order_id": "o-7"}})})
    reply = span(t, "chat gpt", parent=root.span_id, start_s=2, attributes={
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": _msgs("tool", {"type": "tool_call_response", "id": "c1", "response": {"total": 120}})})
    steps = _one_run([root, call, reply]).steps
    assert [(s.tool, s.arguments, s.result) for s in steps] == [("lookup", '{"order_id": "o-7"}', '{"total": 120}')]


def test_an_errored_tool_call_response_reads_as_an_error_result():
    t = trace_id()
    root = agent(t)
    call = span(t, "chat", parent=root.span_id, start_s=1, attributes={
        "gen_ai.output.messages": _msgs("assistant", {"type": "tool_call", "id": "c1", "name": "lookup", "arguments": "{}"})})
    reply = span(t, "chat", parent=root.span_id, start_s=2, attributes={
        "gen_ai.input.messages": _msgs("tool", {"type": "tool_call_response", "id": "c1", "result": "boom",
                                                "is_error": True})})
    (step,) = _one_run([root, call, reply]).steps
    assert step.result == "Error: boom" and not step.ok


def test_a_hybrid_trace_counts_a_call_once_and_a_call_no_tool_span_ran_is_not_a_step():
    t = trace_id()
    root = agent(t)
    chat = span(t, "chat", parent=root.span_id, start_s=1, attributes={
        "gen_ai.output.messages": _msgs("assistant",
                                        {"type": "tool_call", "id": "c1", "name": "lookup", "arguments": "{}"},
                                        {"type": "tool_call", "id": "c2", "name": "notify", "arguments": "{}"})})
    ran = tool(t, root.span_id, "lookup", "{}", "ok", start_s=2, call_id="c1")
    steps = _one_run([root, chat, ran]).steps
    # c1 from its span, once; c2 was only asked for (no span ran it), so it is not a step
    assert [s.tool for s in steps] == ["lookup"]


def test_legacy_prompt_and_completion_attributes_give_prompt_and_answer():
    t = trace_id()
    root = span(t, "invoke_agent shop", attributes={"gen_ai.operation.name": "invoke_agent",
                                                    "gen_ai.prompt": "Where is my order?",
                                                    "gen_ai.completion": "It ships today."})
    run = _one_run([root])
    assert (run.prompt, run.answer) == ("Where is my order?", "It ships today.")


def test_a_tool_span_named_execute_tool_without_the_operation_attribute_is_a_step():
    t = trace_id()
    root = agent(t)
    s = span(t, "execute_tool search", parent=root.span_id, start_s=1,
             attributes={"gen_ai.tool.call.arguments": '{"q": 1}', "gen_ai.tool.call.result": "[]"})
    (step,) = _one_run([root, s]).steps
    assert (step.tool, step.arguments, step.result) == ("search", '{"q": 1}', "[]")


def test_finish_reason_length_on_a_chat_span_fires_context_overflow_early_and_at_the_end():
    t = trace_id()
    root = agent(t, prompt="q", answer="a")
    chat = span(t, "chat gpt-4o", parent=root.span_id, start_s=1,
                attributes={"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": ["length"]})
    (v,) = check_spans([[root, chat]], select())
    overflow = next(r for r in v.results if r.check == "context_overflow")
    assert overflow.fired and "'length'" in overflow.reason
    assert [f.check for f in v.early] == ["context_overflow"]


def test_openinference_flattened_llm_messages_give_steps_in_a_chat_only_trace():
    t = trace_id()
    root = span(t, "agent", attributes={"openinference.span.kind": "AGENT", "input.value": "refund o-7",
                                        "output.value": "done"})
    llm = span(t, "ChatCompletion", parent=root.span_id, start_s=1, attributes={
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "refund o-7",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c1",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "issue_refund",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"amount": 120}',
        "llm.finish_reason": "tool_calls"})
    llm2 = span(t, "ChatCompletion", parent=root.span_id, start_s=2, attributes={
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "tool",
        "llm.input_messages.0.message.tool_call_id": "c1",
        "llm.input_messages.0.message.content": "ok"})
    run = _one_run([root, llm, llm2])
    assert [(s.tool, s.arguments, s.result) for s in run.steps] == [("issue_refund", '{"amount": 120}', "ok")]
    assert (run.prompt, run.answer) == ("refund o-7", "done")


def test_openinference_tool_spans_take_arguments_from_input_value_and_shadow_message_calls():
    t = trace_id()
    root = span(t, "agent", attributes={"openinference.span.kind": "AGENT"})
    llm = span(t, "ChatCompletion", parent=root.span_id, start_s=1, attributes={
        "openinference.span.kind": "LLM",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "lookup"})
    t1 = span(t, "lookup", parent=root.span_id, start_s=2, attributes={
        "openinference.span.kind": "TOOL", "tool.name": "lookup", "input.value": '{"id": 7}',
        "tool.parameters": '{"type": "object"}', "output.value": "found"})
    t2 = span(t, "lookup", parent=root.span_id, start_s=3, status=2, message="timeout", attributes={
        "openinference.span.kind": "TOOL", "tool.name": "lookup", "input.value": '{"id": 8}'})
    steps = _one_run([root, llm, t1, t2]).steps
    assert [(s.tool, s.arguments, s.result, s.ok) for s in steps] == [
        ("lookup", '{"id": 7}', "found", True), ("lookup", '{"id": 8}', "Error: timeout", False)]


def test_openllmetry_tool_spans_and_indexed_completion_tool_calls_are_read():
    t = trace_id()
    root = span(t, "support.agent", attributes={"traceloop.span.kind": "agent", "traceloop.entity.name": "support",
                                                "traceloop.entity.input": '{"args": ["refund o-7"], "kwargs": {}}',
                                                "traceloop.entity.output": '"done"'})
    llm = span(t, "openai.chat", parent=root.span_id, start_s=1, attributes={
        "llm.request.type": "chat",
        "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "refund o-7",
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.finish_reason": "tool_calls",
        "gen_ai.completion.0.tool_calls.0.id": "c9",
        "gen_ai.completion.0.tool_calls.0.name": "notify",
        "gen_ai.completion.0.tool_calls.0.arguments": '{"to": "ops"}'})
    tl = span(t, "issue_refund.tool", parent=root.span_id, start_s=2, attributes={
        "traceloop.span.kind": "tool", "traceloop.entity.name": "issue_refund",
        "traceloop.entity.input": '{"args": [], "kwargs": {"order_id": "o-7"}}',
        "traceloop.entity.output": '{"ok": true}'})
    run = _one_run([root, llm, tl])
    # the indexed completion's call is read; as no tool span ran it, it is not a step
    assert [(c.name, c.arguments) for c in llm.calls] == [("notify", '{"to": "ops"}')]
    assert [(s.tool, s.arguments) for s in run.steps] == [("issue_refund", '{"order_id": "o-7"}')]
    assert [s.tool for s in _one_run([root, llm]).steps] == ["notify"]  # chat-only: the messages are the steps
    assert run.agent == "support" and run.prompt == "refund o-7"
    assert llm.finish_reasons == ("tool_calls",)
