"""The Vercel AI SDK's own telemetry (read/vercel.rs), on the attributes ai@6.0.333 writes
with ``experimental_telemetry`` (recorded by tests/conformance/generator/js/vercel-ai against
the scripted model: tests/conformance/corpus/vercel-ai-*), and the shapes of other real
instrumentation that were misread (issue 40), each on its instrumentation's own attributes."""
from __future__ import annotations

import json
from pathlib import Path

from faultgate_stream.checks.policy.schema import load_policy
from faultgate_stream.checks.registry import policy_checks, select
from faultgate_stream.model.records import UNREAD
from faultgate_stream.pipeline import assemble_runs, check_spans
from faultgate_stream.testing import agent, span, tool, trace_id

PROMPT_MESSAGES = [{"role": "system", "content": "Help the user; use the tools."},
                   {"role": "user", "content": [{"type": "text", "text": "How much is invoice INV-9?"}]}]


def _one_run(spans):
    (run,) = assemble_runs(spans)
    return run


def _fired(spans, checks):
    (v,) = check_spans([spans], checks)
    return {r.check for r in v.fired}, {r.check for r in v.undecided}


def generate_text(t, *, failed_tool: bool = False, last: str = "Invoice INV-9 is 120.00 EUR.", finish: str = "stop",
                  stream: bool = False):
    """ai.generateText (or ai.streamText) > doGenerate (a tool call) > ai.toolCall > doGenerate (the answer)."""
    op = "ai.streamText" if stream else "ai.generateText"
    step = f"{op}.doStream" if stream else f"{op}.doGenerate"
    root = span(t, op, end_s=5, attributes={
        "operation.name": f"{op} assistant", "ai.operationId": op, "ai.telemetry.functionId": "assistant",
        "ai.model.provider": "openai.chat", "ai.model.id": "scripted-1",
        "ai.prompt": json.dumps({"system": "Help the user; use the tools.", "prompt": "How much is invoice INV-9?"}),
        "ai.response.finishReason": finish, "ai.response.text": last, "ai.usage.inputTokens": 90})
    call = {"toolCallId": "call_0", "toolName": "fetch_invoice"}
    # generateText writes a call's input as the model's JSON text, streamText as an object
    call["input"] = {"invoice_id": "INV-9"} if stream else '{"invoice_id": "INV-9"}'
    first = span(t, step, parent=root.span_id, start_s=1, attributes={
        "ai.operationId": step, "ai.model.id": "scripted-1", "ai.prompt.messages": json.dumps(PROMPT_MESSAGES),
        "ai.response.finishReason": "tool-calls", "ai.response.toolCalls": json.dumps([call]),
        "ai.response.text": "", "gen_ai.response.finish_reasons": ["tool-calls"], "gen_ai.usage.input_tokens": 40})
    tool_attrs = {"operation.name": "ai.toolCall assistant", "ai.operationId": "ai.toolCall",
                  "ai.toolCall.name": "fetch_invoice", "ai.toolCall.id": "call_0",
                  "ai.toolCall.args": '{"invoice_id":"INV-9"}'}
    if not failed_tool:
        tool_attrs["ai.toolCall.result"] = json.dumps("INV-9: 120.00 EUR, paid")  # JSON.stringify of the string
    executed = span(t, "ai.toolCall", parent=root.span_id, start_s=2, status=2 if failed_tool else 0,
                    message="invoice service unavailable (HTTP 503)" if failed_tool else "", attributes=tool_attrs)
    result = ({"type": "error-text", "value": "invoice service unavailable (HTTP 503)"} if failed_tool
              else {"type": "text", "value": "INV-9: 120.00 EUR, paid"})
    second = span(t, step, parent=root.span_id, start_s=3, attributes={
        "ai.operationId": step, "ai.model.id": "scripted-1",
        "ai.prompt.messages": json.dumps(PROMPT_MESSAGES + [
            {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "call_0", "toolName": "fetch_invoice",
                                               "input": {"invoice_id": "INV-9"}}]},
            {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "call_0", "toolName": "fetch_invoice",
                                          "output": result}]}]),
        "ai.response.finishReason": finish, "ai.response.text": last, "gen_ai.response.finish_reasons": [finish]})
    return [root, first, executed, second]


def test_a_vercel_ai_sdk_call_is_an_agent_run_with_its_model_calls_and_tool_calls_read():
    spans = generate_text(trace_id())
    root, first, executed, second = spans
    assert (root.operation, first.operation, executed.operation) == ("invoke_agent", "chat", "execute_tool")
    assert not any(s.missing & UNREAD for s in spans)
    assert [(c.name, json.loads(c.arguments)) for c in first.calls] == [("fetch_invoice", {"invoice_id": "INV-9"})]
    run = _one_run(spans)
    assert (run.prompt, run.answer, run.agent) == ("How much is invoice INV-9?", "Invoice INV-9 is 120.00 EUR.",
                                                   "assistant")
    (step,) = run.steps
    # ai.toolCall.result is JSON.stringify of the tool's return value: the string, unquoted
    assert (step.tool, step.arguments, step.result, step.call_id) == (
        "fetch_invoice", '{"invoice_id":"INV-9"}', "INV-9: 120.00 EUR, paid", "call_0")
    assert _fired(spans, select(None)) == (set(), set())


def test_stream_text_writes_a_calls_input_as_an_object_and_is_read_the_same():
    spans = generate_text(trace_id(), stream=True)
    assert [(c.name, json.loads(c.arguments)) for c in spans[1].calls] == [("fetch_invoice", {"invoice_id": "INV-9"})]
    assert _one_run(spans).answer == "Invoice INV-9 is 120.00 EUR."


def test_a_tool_that_threw_and_a_cut_off_answer_are_failures():
    spans = generate_text(trace_id(), failed_tool=True, finish="length", last="The invoice system did not")
    assert _one_run(spans).steps[0].ok is False
    # the model was told of the error as an error-text tool result
    assert spans[3].responses == (("call_0", "Error: invoice service unavailable (HTTP 503)"),)
    assert _fired(spans, select(["unrecovered_tool_error", "context_overflow"]))[0] == {
        "unrecovered_tool_error", "context_overflow"}


def test_an_sdk_operation_not_mapped_is_left_to_the_honesty_floor():
    t = trace_id()
    s = span(t, "ai.rerank", attributes={"ai.operationId": "ai.rerank", "ai.model.id": "m"})
    assert s.operation is None and s.missing & UNREAD


# ------------------------------------------------------------------ shapes of other instrumentation


def test_finish_reasons_written_as_one_json_string_are_read_as_the_list():
    """Mastra's OTel bridge (@mastra/otel-bridge 1.5, tests/conformance/corpus/
    mastra-otel-bridge) and AG2's instrumentation write ``JSON.stringify`` / ``json.dumps``
    of the list: a cut-off at the token limit was missed, and the run was not undecided either."""
    t = trace_id()
    root = agent(t, prompt="Describe the weather.", answer="It is 18C and sunny. The wind")
    chat = span(t, "chat scripted-1", parent=root.span_id, start_s=1, attributes={
        "gen_ai.operation.name": "chat", "mastra.span.type": "model_generation",
        "gen_ai.response.finish_reasons": '["length"]'})
    assert chat.finish_reasons == ("length",)
    assert _fired([root, chat], select(["context_overflow"]))[0] == {"context_overflow"}


def test_mastras_agent_run_carries_its_input_and_output_under_its_own_keys():
    """@mastra/otel-bridge 1.5: the invoke_agent span's prompt and answer are
    ``mastra.agent_run.input`` / ``.output`` (``{"text", "files"}``); an empty text is an
    empty answer read, not output left unread."""
    t = trace_id()
    attrs = {"gen_ai.operation.name": "invoke_agent", "mastra.span.type": "agent_run", "gen_ai.agent.name": "assistant",
             "mastra.agent_run.input": "Weather in Paris?"}
    answered = span(t, "invoke_agent assistant", attributes={
        **attrs, "mastra.agent_run.output": '{"text":"It is 18C and sunny.","files":[]}'})
    assert (answered.prompt, answered.answer) == ("Weather in Paris?", "It is 18C and sunny.")
    cut = span(trace_id(), "invoke_agent assistant", attributes={**attrs, "mastra.agent_run.output": '{"text":"","files":[]}'})
    assert cut.answer == "" and not cut.missing & UNREAD


def test_a_tool_result_json_encoded_once_more_is_read_as_the_string_inside():
    """JSON.stringify (the Vercel AI SDK's ai.toolCall.result) or json.dumps of a string
    result: an error the tool returned as text read as a quoted string, not an error."""
    t = trace_id()
    root = agent(t, prompt="How much is invoice INV-9?", answer="I have no amount yet.")
    failed = tool(t, root.span_id, "fetch_invoice", {"invoice_id": "INV-9"},
                  json.dumps("Error: invoice service unavailable (HTTP 503)"))
    assert _one_run([root, failed]).steps[0].result == "Error: invoice service unavailable (HTTP 503)"
    assert _fired([root, failed], select(["unrecovered_tool_error"]))[0] == {"unrecovered_tool_error"}


def test_tool_arguments_written_as_a_python_dict_repr_are_read_as_json(tmp_path: Path):
    """``str(args)`` (AG2's and many hand-made execute_tool spans): a limit on an argument's
    value saw no value, so a refund past the policy passed."""
    t = trace_id()
    root = agent(t, prompt="Refund customer C-1.", answer="Refunded.")
    refund = span(t, "execute_tool issue_refund", parent=root.span_id, start_s=1, attributes={
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "issue_refund",
        "gen_ai.tool.call.arguments": str({"customer_id": "C-1", "amount": 900, "note": "it's late"}),
        "gen_ai.tool.call.result": "refunded"})
    assert json.loads(refund.tool.arguments) == {"customer_id": "C-1", "amount": 900, "note": "it's late"}
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"limits": [{"tool": "issue_refund", "arg": "amount", "max": 500}]}))
    assert _fired([root, refund], policy_checks(load_policy(policy)))[0] == {"policy"}


def test_a_handled_tool_exception_with_status_ok_and_an_error_status_attribute_is_a_failed_call():
    """Strands records a tool exception it handled as ``gen_ai.tool.status: error`` (before
    1.0: ``tool.status``) on a span whose status is OK, the exception's text as the result."""
    t = trace_id()
    root = agent(t, prompt="How much is invoice INV-9?", answer="The invoice system did not respond.")
    failed = span(t, "execute_tool fetch_invoice", parent=root.span_id, start_s=1, attributes={
        "gen_ai.operation.name": "execute_tool", "gen_ai.system": "strands-agents", "gen_ai.tool.name": "fetch_invoice",
        "gen_ai.tool.call.id": "tooluse_1", "gen_ai.tool.status": "error",
        "gen_ai.tool.call.result": '[{"text": "invoice service unavailable (HTTP 503)"}]'})
    assert failed.status_code == 0
    assert _one_run([root, failed]).steps[0].result.startswith("Error: ")
    assert _fired([root, failed], select(["unrecovered_tool_error"]))[0] == {"unrecovered_tool_error"}
