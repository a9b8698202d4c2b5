"""Shapes found in runs recorded by real frameworks through their real instrumentation
(tests/conformance/corpus), each read as what it means, none tied to one file."""
from __future__ import annotations

import json

from faultgate_stream.checks.registry import select
from faultgate_stream.model.records import MISSING_FINISH, MISSING_OUTPUT
from faultgate_stream.pipeline import assemble_runs, check_spans
from faultgate_stream.testing import agent, span, tool, trace_id


def _one_run(spans):
    runs = assemble_runs(spans)
    assert len(runs) == 1, [str(r.key) for r in runs]
    return runs[0]


def _fired(spans, check):
    (v,) = check_spans([spans], select([check]))
    return [r.check for r in v.fired]


def _lc_tool_message(content, call_id, status="success"):
    return json.dumps({"type": "tool", "data": {"content": content, "additional_kwargs": {}, "response_metadata": {},
                                                "type": "tool", "name": "job_status", "id": None,
                                                "tool_call_id": call_id, "artifact": None, "status": status}})


def _oi_tool(t, parent, name, args, result, start_s, **attrs):
    return span(t, name, parent=parent, start_s=start_s, attributes={
        "openinference.span.kind": "TOOL", "tool.name": name, "input.value": args, "output.value": result, **attrs})


def test_a_serialised_langchain_tool_message_reads_as_its_content_so_repeats_are_seen():
    # openinference-instrumentation-langchain 0.1.80 writes a LangGraph tool's output.value
    # as the whole ToolMessage; its tool_call_id differs per call and hid three identical results
    t = trace_id()
    root = span(t, "assistant", attributes={"openinference.span.kind": "CHAIN", "input.value": "Is job 42 done?",
                                            "output.value": "done"})
    calls = [_oi_tool(t, root.span_id, "job_status", "42", _lc_tool_message("status: pending", f"call_{i}"), 1 + i)
             for i in range(3)]
    run = _one_run([root, *calls])
    assert [s.result for s in run.steps] == ["status: pending"] * 3
    assert _fired([root, *calls], "repeated_call") == ["repeated_call"]


def test_a_tool_message_with_error_status_is_an_error_result():
    t = trace_id()
    root = agent(t)
    failed = _oi_tool(t, root.span_id, "fetch_invoice", "INV-9",
                      _lc_tool_message("invoice service unavailable", "c1", status="error"), 1)
    assert _one_run([root, failed]).steps[0].result == "Error: invoice service unavailable"


def test_a_root_output_that_is_the_graph_state_answers_with_its_last_ai_message():
    t = trace_id()
    state = {"messages": [
        {"type": "human", "data": {"content": "Weather in Paris?", "type": "human"}},
        {"type": "ai", "data": {"content": "", "type": "ai", "tool_calls": [{"name": "get_weather"}]}},
        {"type": "tool", "data": {"content": "18C", "type": "tool", "tool_call_id": "c1"}},
        {"type": "ai", "data": {"content": "It is 18C in Paris.", "type": "ai"}}]}
    root = span(t, "assistant", attributes={"openinference.span.kind": "CHAIN", "output.value": json.dumps(state),
                                            "output.mime_type": "application/json",
                                            "input.value": json.dumps({"messages": [["user", "Weather in Paris?"]]})})
    assert _one_run([root]).answer == "It is 18C in Paris."


def test_langgraph_chain_nodes_are_one_run_not_an_agent_each():
    t = trace_id()
    root = span(t, "assistant", attributes={"openinference.span.kind": "CHAIN", "output.value": "ok"})
    node = span(t, "agent", parent=root.span_id, start_s=1, attributes={"openinference.span.kind": "CHAIN"})
    tools = span(t, "tools", parent=root.span_id, start_s=2, attributes={"openinference.span.kind": "CHAIN"})
    run = _one_run([root, node, tools, _oi_tool(t, tools.span_id, "get_weather", "Paris", "18C", 2.5)])
    assert [s.is_agent for s in run.spans] == [True, False, False, False]


def test_an_openinference_agent_under_a_server_span_carries_the_prompt_and_answer():
    t = trace_id()
    server = span(t, "POST /chat")
    ag = span(t, "support", parent=server.span_id, start_s=0.1, end_s=5, attributes={
        "openinference.span.kind": "AGENT", "input.value": "Where is order 7?", "output.value": "It shipped today."})
    run = _one_run([server, ag, _oi_tool(t, ag.span_id, "lookup", '{"id": 7}', "shipped", 1)])
    assert (run.prompt, run.answer) == ("Where is order 7?", "It shipped today.")


def test_openinference_tool_parameters_that_are_a_schema_are_not_arguments():
    t = trace_id()
    root = agent(t)
    schema = json.dumps({"type": "object", "properties": {"path": {"type": "string"}}})
    tl = span(t, "read_file", parent=root.span_id, start_s=1, attributes={
        "openinference.span.kind": "TOOL", "tool.name": "read_file", "tool.parameters": schema, "output.value": "x"})
    assert _one_run([root, tl]).steps[0].arguments == ""


def test_a_callback_payload_is_unwrapped_to_the_tool_arguments():
    t = trace_id()
    root = agent(t)
    smol = _oi_tool(t, root.span_id, "search_docs", json.dumps(
        {"args": [], "sanitize_inputs_outputs": True, "kwargs": {"query": "refunds"}}), "[]", 1)
    lc = tool(t, root.span_id, "read_file", json.dumps(
        {"input_str": "{'path': '../../etc/passwd'}", "tags": ["seq:step:1"], "metadata": {"langgraph_step": 2}}),
        "root:x:0:0", start_s=2)
    run = _one_run([root, smol, lc])
    assert [s.arguments for s in run.steps] == ['{"query": "refunds"}', '{"path": "../../etc/passwd"}']
    assert _fired([root, smol, lc], "policy") == ["policy"]


def test_an_openllmetry_tool_span_without_a_call_id_pairs_with_the_model_call_instead_of_counting_twice():
    t = trace_id()
    root = agent(t)
    chat = span(t, "ChatOpenAI.chat", parent=root.span_id, start_s=1, attributes={
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.tool_calls.0.id": "c1", "gen_ai.completion.0.tool_calls.0.name": "fetch_invoice",
        "gen_ai.completion.0.tool_calls.0.arguments": '{"invoice_id": "INV-9"}'})
    ran = span(t, "fetch_invoice.tool", parent=root.span_id, start_s=2, status=2, attributes={
        "traceloop.span.kind": "tool", "traceloop.entity.name": "fetch_invoice", "error.type": "ToolFailure"})
    reply = span(t, "ChatOpenAI.chat", parent=root.span_id, start_s=3, attributes={
        "gen_ai.prompt.0.role": "tool", "gen_ai.prompt.0.tool_call_id": "c1",
        "gen_ai.prompt.0.content": "Error: invoice service unavailable"})
    (step,) = _one_run([root, chat, ran, reply]).steps
    assert (step.tool, step.call_id, step.result, step.ok) == ("fetch_invoice", "c1",
                                                               "Error: invoice service unavailable", False)


def test_a_call_the_model_named_but_no_tool_span_ran_is_not_a_step():
    t = trace_id()
    root = agent(t)
    chat = span(t, "chat", parent=root.span_id, start_s=12, attributes={"gen_ai.output.messages": json.dumps(
        [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c13", "name": "search", "arguments": "{}"}]}])})
    ran = [tool(t, root.span_id, "search", {"q": i}, "[]", start_s=1 + i, call_id=f"c{i}") for i in range(12)]
    assert len(_one_run([root, chat, *ran]).steps) == 12


def test_a_status_only_tool_failure_is_not_recovered_by_another_tool():
    t = trace_id()
    root = agent(t, answer="Order O-1 totals 120.")
    failed = tool(t, root.span_id, "fetch_invoice", {"id": "INV-9"}, "", start_s=1, status=2)
    other = tool(t, root.span_id, "get_orders", {"customer": "C-17"}, '[{"id": "O-1"}]', start_s=2)
    assert _fired([root, failed, other], "unrecovered_tool_error") == ["unrecovered_tool_error"]
    retried = tool(t, root.span_id, "fetch_invoice", {"id": "INV-9"}, "120.00 EUR", start_s=3)
    assert _fired([root, failed, other, retried], "unrecovered_tool_error") == []


def test_openai_agents_v2_repr_messages_are_read_for_what_they_hold():
    # opentelemetry-instrumentation-openai-agents-v2 0.1.0 writes the assistant message as str()
    t = trace_id()
    top = span(t, "Agent workflow", end_s=20, attributes={"gen_ai.operation.name": "invoke_agent"})
    calls_only = ("{'content': None, 'refusal': None, 'role': 'assistant', 'tool_calls': [{'id': 'c1', "
                  "'function': {'arguments': '{\"query\": \"refunds\"}', 'name': 'search_docs'}, 'type': 'function'}]}")
    chat = span(t, "chat scripted-1", parent=top.span_id, start_s=1, attributes={
        "gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": calls_only}]}])})
    run = _one_run([top, chat])
    assert run.answer == "" and [(c.name, c.call_id) for c in chat.calls] == [("search_docs", "c1")]
    said = "{'content': 'It is 18C.', 'role': 'assistant', 'tool_calls': None}"
    chat2 = span(t, "chat scripted-1", parent=top.span_id, start_s=2, attributes={
        "gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": said}]}])})
    assert _one_run([top, chat, chat2]).answer == "It is 18C."


def test_a_nested_agent_that_ended_in_error_did_not_answer():
    t = trace_id()
    top = span(t, "Agent workflow", end_s=20, attributes={"gen_ai.operation.name": "invoke_agent"})
    inner = agent(t, name="assistant", parent=top.span_id, start_s=0.5, end_s=19)
    inner = inner._replace(status_code=2, status_message="Max turns exceeded")
    chat = span(t, "chat", parent=inner.span_id, start_s=18, attributes={
        "gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": "Let me search once more."}]}])})
    assert _one_run([top, inner, chat]).answer == ""


def test_a_framework_budget_message_is_no_answer_and_says_the_step_limit_ended_the_run():
    t = trace_id()
    root = agent(t, answer="Sorry, need more steps to process this request.", end_s=30)
    ran = [tool(t, root.span_id, "search", {"q": i}, "[]", start_s=1 + i) for i in range(3)]
    run = _one_run([root, *ran])
    assert run.answer == "" and "step limit" in run.termination
    assert _fired([root, *ran], "search_loop") == ["search_loop"]


def test_a_create_agent_trace_is_not_a_run():
    t = trace_id()
    built = span(t, "create_agent assistant", attributes={"gen_ai.operation.name": "create_agent"})
    assert check_spans([[built]], select()) == []
    # a trace that also runs the agent is a run as always
    root = agent(trace_id())
    assert len(check_spans([[root]], select())) == 1


def test_a_fragment_whose_parent_is_missing_inside_the_one_agent_window_joins_that_run():
    t = trace_id()
    root = agent(t, start_s=0, end_s=10)
    fragment = tool(t, "0000000000dead00", "lookup", {"id": 1}, "ok", start_s=3)
    (run,) = assemble_runs([root, fragment])
    assert run.key.root_span_id == root.span_id and [s.tool for s in run.steps] == ["lookup"]
    outside = tool(t, "0000000000dead00", "lookup", {"id": 2}, "ok", start_s=30)
    assert len(assemble_runs([root, outside])) == 2  # after the run's window: its own orphan


def test_with_bindings_a_langgraph_run_gives_one_result_per_check(tmp_path):
    # Every LangGraph node is an OpenInference CHAIN: as agents, they made one view each and
    # a bound check gave one result per node (24 ``policy`` results on one run).
    from faultgate_stream.checks.config import BindingConfig, ChecksConfig
    from faultgate_stream.model.clock import ManualClock
    from faultgate_stream.assemble.assembler import Assembler
    from faultgate_stream.model.verdict import Completion
    from faultgate_stream.pipeline import OFFLINE_LIMITS, VerdictList
    from faultgate_stream.read.files import read_file
    from faultgate_stream.verdict.evaluate import Evaluator
    from faultgate_stream.verdict.ruleset import build as build_ruleset
    from tests.conformance.score import CORPUS

    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"deny_patterns": ["\\.\\./"]}))
    ruleset = build_ruleset(ChecksConfig(bindings=(BindingConfig(agents=("*",), policy=str(policy)),)))
    sink = VerdictList()
    assembler = Assembler(Evaluator(ruleset, sink), ManualClock(), OFFLINE_LIMITS)
    assembler.add(read_file(CORPUS / "langgraph-openinference" / "traces.json")[1])
    assembler.close_all(Completion.COMPLETE)
    assert sink.verdicts
    for v in sink.verdicts:
        names = [r.check for r in v.results]
        assert len(names) == len(set(names)), (str(v.key), names)


def test_a_tool_span_without_content_takes_its_calls_arguments_and_result_from_the_messages():
    # opentelemetry-util-genai with content in events only: the execute_tool span names the
    # tool and the call id; the arguments and result are in the chat messages
    t = trace_id()
    root = agent(t)
    chat = span(t, "chat", parent=root.span_id, start_s=1, attributes={"gen_ai.output.messages": json.dumps(
        [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "read_file",
                                          "arguments": {"path": "../../etc/passwd"}}]}])})
    ran = span(t, "execute_tool read_file", parent=root.span_id, start_s=2, attributes={
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read_file", "gen_ai.tool.call.id": "c1"})
    reply = span(t, "chat", parent=root.span_id, start_s=3, attributes={"gen_ai.input.messages": json.dumps(
        [{"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "root:x:0:0"}]}])})
    (step,) = _one_run([root, chat, ran, reply]).steps
    assert (step.arguments, step.result) == ('{"path": "../../etc/passwd"}', "root:x:0:0")


def test_a_crew_output_answers_with_its_raw_text():
    t = trace_id()
    out = {"raw": "Order O-1 totals 120.00 EUR.", "pydantic": None, "json_dict": None,
           "tasks_output": [{"description": "How much is invoice INV-9?", "raw": "Order O-1 totals 120.00 EUR."}],
           "token_usage": {"total_tokens": 120}}
    root = span(t, "Crew.kickoff", attributes={"openinference.span.kind": "CHAIN", "output.value": json.dumps(out)})
    assert _one_run([root]).answer == "Order O-1 totals 120.00 EUR."


def test_langgraph_and_smolagents_inputs_give_the_users_prompt():
    t = trace_id()
    lg = span(t, "assistant", attributes={"openinference.span.kind": "CHAIN",
                                          "input.value": json.dumps({"messages": [["user", "Weather in Paris?"]]})})
    assert _one_run([lg]).prompt == "Weather in Paris?"
    smol = span(trace_id(), "assistant.run", attributes={"openinference.span.kind": "AGENT", "input.value": json.dumps(
        {"task": "Weather in Paris?", "stream": False, "reset": True})})
    assert _one_run([smol]).prompt == "Weather in Paris?"


def _results(spans, check):
    (v,) = check_spans([spans], select([check]))
    (r,) = v.results
    return r


def test_an_openinference_llm_span_without_a_finish_reason_leaves_context_overflow_undecided():
    t = trace_id()
    root = agent(t, answer="It is 18C and sunny in Paris. The wind comes from the")
    llm = span(t, "generation", parent=root.span_id, start_s=1, attributes={
        "openinference.span.kind": "LLM", "input.value": "weather?", "output.value": "It is 18C and sunny in Paris."})
    r = _results([root, llm], "context_overflow")
    assert r.undecided and "finish reasons" in r.reason
    said = span(t, "generation", parent=root.span_id, start_s=1, attributes={
        "openinference.span.kind": "LLM", "input.value": "weather?", "output.value": "...",
        "llm.finish_reason": "length"})
    assert _results([root, said], "context_overflow").fired


def test_a_failed_tool_span_without_a_result_is_not_content_left_out():
    # smolagents / OpenLLMetry: a tool that raised has a status and no output; its result is
    # not "not captured", so the content checks still decide
    t = trace_id()
    root = agent(t, answer="Invoice INV-9 is 120.00 EUR.")
    failed = span(t, "fetch_invoice", parent=root.span_id, start_s=1, status=2, message="service unavailable",
                  attributes={"openinference.span.kind": "TOOL", "tool.name": "fetch_invoice",
                              "input.value": '{"invoice_id": "INV-9"}'})
    ok = _oi_tool(t, root.span_id, "fetch_invoice", '{"invoice_id": "INV-9"}', "120.00 EUR", 2)
    (v,) = check_spans([[root, failed, ok]], select(["repeated_call", "search_loop", "unrecovered_tool_error"]))
    assert v.verdict == "clean", [(r.check, r.reason) for r in v.results]


def _event_only_loop(seen: int):
    """Twelve searches whose calls and results are only in the chat messages (content in
    events, joined); the results of calls ``seen`` and after appear in no later message."""
    t = trace_id()
    root = agent(t, end_s=30)
    spans = [root]
    for i in range(12):
        back = ([{"role": "tool", "parts": [{"type": "tool_call_response", "id": f"c{i - 1}", "response": "[]"}]}]
                if 0 < i <= seen else [{"role": "user", "parts": [{"type": "text", "content": "refund policy?"}]}])
        spans.append(span(t, "chat", parent=root.span_id, start_s=1 + 2 * i, attributes={
            "gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": ["tool_calls"],
            "gen_ai.input.messages": json.dumps(back),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                {"type": "tool_call", "id": f"c{i}", "name": "search", "arguments": {"q": i}}]}])}))
        spans.append(span(t, "execute_tool search", parent=root.span_id, start_s=2 + 2 * i, attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search", "gen_ai.tool.call.id": f"c{i}"}))
    return spans


def test_search_loop_decides_when_the_results_it_cannot_see_cannot_change_it():
    # event_only content: the last call's result is in no later message, as the budget ended the run
    r = _results(_event_only_loop(seen=11), "search_loop")
    assert r.fired, r.reason  # 11 of 12 empty: a search loop, whatever the twelfth returned
    r = _results(_event_only_loop(seen=5), "search_loop")
    assert r.undecided, r.reason  # 5 of 12 empty and 7 unseen: they decide it


# ---------------------------------------------------------------- issue 35: frameworks new to the corpus

def _chat(t, parent, start_s, **attrs):
    return span(t, "chat scripted-1", parent=parent, start_s=start_s,
                attributes={"gen_ai.operation.name": "chat", **attrs})


def _undecided(spans, check):
    (v,) = check_spans([spans], select([check]))
    return [r.check for r in v.results if r.undecided]


def test_semantic_kernels_one_finish_reason_written_as_its_enum_is_read_so_a_cut_off_fires():
    # semantic-kernel 1.45 writes gen_ai.response.finish_reason (singular) = "FinishReason.LENGTH"
    t = trace_id()
    root = agent(t, name="assistant", answer="It is 18C and sunny in Paris. The wind comes from the")
    cut = _chat(t, root.span_id, 1, **{"gen_ai.response.finish_reason": "FinishReason.LENGTH"})
    assert cut.finish_reasons == ("length",)
    assert _fired([root, cut], "context_overflow") == ["context_overflow"]
    done = _chat(t, root.span_id, 1, **{"gen_ai.response.finish_reason": "FinishReason.STOP"})
    assert _fired([root, done], "context_overflow") == [] and _undecided([root, done], "context_overflow") == []


def test_an_autogen_llm_span_keeps_its_finish_reason_inside_output_value_and_it_is_read():
    # openinference-instrumentation-autogen-agentchat 0.1.22: no llm.finish_reason, the model's
    # result as JSON in output.value
    t = trace_id()
    root = span(t, "assistant.on_messages_stream", attributes={"openinference.span.kind": "AGENT"})
    llm = span(t, "OpenAIChatCompletionClient.create", parent=root.span_id, start_s=1, attributes={
        "openinference.span.kind": "LLM", "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Describe the weather in Paris.",
        "output.value": json.dumps({"finish_reason": "length", "content": "It is 18C. The wind comes from the",
                                    "usage": {"prompt_tokens": 50}, "cached": False}),
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "It is 18C. The wind comes from the"})
    assert llm.finish_reasons == ("length",)
    assert _fired([root, llm], "context_overflow") == ["context_overflow"]


def test_a_tool_span_inside_a_tool_span_of_the_same_tool_is_one_step_with_the_inner_call_id():
    # AutoGen: autogen-core's own execute_tool span (call id, no content) inside
    # OpenInference's TOOL span (content, no call id): one call, not a second one unrecorded
    t = trace_id()
    root = agent(t, name="assistant", answer="It is 18C in Paris.")
    outer = _oi_tool(t, root.span_id, "get_weather", '{"city": "Paris"}', "18C, sunny", 1)
    inner = span(t, "execute_tool get_weather", parent=outer.span_id, start_s=1.01, attributes={
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": "call_0"})
    run = _one_run([root, outer, inner])
    assert [(s.tool, s.result, s.call_id) for s in run.steps] == [("get_weather", "18C, sunny", "call_0")]
    assert _undecided([root, outer, inner], "unrecovered_tool_error") == []


def test_an_agent_whose_last_output_is_a_tool_call_ended_at_its_step_limit_and_did_not_answer():
    # Semantic Kernel at maximum_auto_invoke_attempts returns the model's last tool call as the
    # agent's output; its chat spans carry no messages, so without this the answer was "not captured"
    t = trace_id()
    last = [{"role": "assistant", "tool_calls": [{"id": "c12", "type": "function", "function": {
        "name": "tools-search_docs", "arguments": '{"query": "refund policy"}'}}]}]
    root = span(t, "invoke_agent assistant", attributes={"gen_ai.operation.name": "invoke_agent",
                                                        "gen_ai.agent.name": "assistant", "gen_ai.input.messages": "[]",
                                                        "gen_ai.output.messages": json.dumps(last)})
    chats = [_chat(t, root.span_id, 1 + i, **{"gen_ai.response.finish_reason": "FinishReason.TOOL_CALLS"})
             for i in range(12)]
    searches = [tool(t, root.span_id, "tools-search_docs", {"query": f"refund policy {i}"}, "[]", start_s=1.5 + i)
                for i in range(12)]
    spans = [root, *chats, *searches]
    run = _one_run(spans)
    assert run.termination.startswith("step limit") and run.answer_not_captured == ""
    assert _fired(spans, "search_loop") == ["search_loop"]


def test_a_framework_budget_error_on_the_agent_span_says_the_step_limit_ended_the_run():
    # google-adk 2.13 at RunConfig.max_llm_calls: the agent span fails with this message, no answer
    t = trace_id()
    root = span(t, "invoke_agent assistant", status=2,
                message="LlmCallsLimitExceededError: Max number of llm calls limit of `12` exceeded",
                attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "assistant"})
    searches = [tool(t, root.span_id, "search_docs", {"query": f"refund policy {i}"}, "[]", start_s=1 + i)
                for i in range(11)]
    run = _one_run([root, *searches])
    assert run.termination == "step limit: LlmCallsLimitExceededError: Max number of llm calls limit of `12` exceeded"
    assert _fired([root, *searches], "search_loop") == ["search_loop"]
    ok = span(t, "invoke_agent assistant", status=2, message="ValueError: bad input",
              attributes={"gen_ai.operation.name": "invoke_agent"})
    assert _one_run([ok]).termination == ""


def test_adks_result_wrapper_reads_as_the_value_and_its_span_of_merged_parallel_calls_is_no_step():
    # google-adk 2.13 wraps a tool's non-object return as {"result": ...} and writes an
    # "execute_tool (merged)" span beside the spans of two parallel calls
    t = trace_id()
    root = agent(t, name="assistant", answer="Both are at 18C.")
    calls = [tool(t, root.span_id, "get_weather", {"city": c}, json.dumps({"result": "[]"}), start_s=1 + i,
                  call_id=f"c{i}") for i, c in enumerate(["Paris", "Rome"])]
    merged = span(t, "execute_tool (merged)", parent=root.span_id, start_s=3, attributes={
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "(merged tools)", "gen_ai.tool.call.id": "ev-1"})
    run = _one_run([root, *calls, merged])
    assert [(s.tool, s.result) for s in run.steps] == [("get_weather", "[]"), ("get_weather", "[]")]
    assert _undecided([root, *calls, merged], "policy") == []


# ---------------------------------------------------------------- issue 35: frameworks new to the corpus

def _sdk_records(build):
    """The records of the spans ``build(tracer)`` makes with the OpenTelemetry SDK, sent as
    its OTLP exporter encodes them and read by the compiled protobuf reader: span events
    (content, exceptions) as the frameworks' own tracers add them."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from faultgate_stream.read import otlp_proto

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    build(provider.get_tracer("test"))
    provider.shutdown()
    return otlp_proto.read(encode_spans(exporter.get_finished_spans()).SerializeToString()).spans


def _strands_run(tracer, *, latest: bool, finish: str = "end_turn", answer: str = "It is 18C and sunny in Paris."):
    """One tool call and an answer, as strands-agents 1.62's tracer writes them: content in
    span events (telemetry/tracer.py), default or ``gen_ai_latest_experimental`` conventions."""
    from opentelemetry.trace import Status, StatusCode

    def details(span, key, value):
        span.add_event("gen_ai.client.inference.operation.details", {key: json.dumps(value)})

    use = {"toolUse": {"toolUseId": "call_0", "name": "get_weather", "input": {"city": "Paris"}}}
    call_part = {"type": "tool_call", "name": "get_weather", "id": "call_0", "arguments": {"city": "Paris"}}
    user = [{"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}]
    with tracer.start_as_current_span("invoke_agent assistant", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "assistant"}) as root:
        if latest:
            details(root, "gen_ai.input.messages", user)
        else:
            root.add_event("gen_ai.user.message", {"content": json.dumps([{"text": "Weather in Paris?"}])})
        with tracer.start_as_current_span("execute_event_loop_cycle",
                                          attributes={"gen_ai.operation.name": "execute_event_loop_cycle"}):
            with tracer.start_as_current_span("chat", attributes={"gen_ai.operation.name": "chat"}) as chat:
                if latest:
                    details(chat, "gen_ai.output.messages",
                            [{"role": "assistant", "parts": [call_part], "finish_reason": "tool_use"}])
                else:
                    chat.add_event("gen_ai.choice", {"finish_reason": "tool_use", "message": json.dumps([use])})
            with tracer.start_as_current_span("execute_tool get_weather", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.id": "call_0"}) as t:
                if latest:
                    t.set_attribute("gen_ai.tool.call.arguments", json.dumps({"city": "Paris"}))
                    t.set_attribute("gen_ai.tool.call.result", json.dumps([{"text": "18C, sunny"}]))
                else:
                    t.add_event("gen_ai.tool.message", {"role": "tool", "content": json.dumps({"city": "Paris"}),
                                                        "id": "call_0"})
                    t.add_event("gen_ai.choice", {"message": json.dumps([{"text": "18C, sunny"}]), "id": "call_0"})
        with tracer.start_as_current_span("execute_event_loop_cycle",
                                          attributes={"gen_ai.operation.name": "execute_event_loop_cycle"}) as cycle:
            with tracer.start_as_current_span("chat", attributes={"gen_ai.operation.name": "chat"}) as chat:
                if latest:
                    details(chat, "gen_ai.output.messages", [{"role": "assistant", "parts": [
                        {"type": "text", "content": answer}], "finish_reason": finish}])
                else:
                    chat.add_event("gen_ai.choice", {"finish_reason": finish, "message": json.dumps([{"text": answer}])})
            if finish == "max_tokens":
                # Strands raises MaxTokensReachedException; the cycle and the agent span fail with it
                cut = ("Model stopped generating due to maximum token limit. The partial message has been added "
                       "to the conversation history.")
                cycle.set_status(Status(StatusCode.ERROR, cut))
                root.set_status(Status(StatusCode.ERROR, cut))
                return
        if latest:
            details(root, "gen_ai.output.messages", [{"role": "assistant", "parts": [
                {"type": "text", "content": answer}], "finish_reason": finish}])
        else:
            root.add_event("gen_ai.choice", {"message": answer, "finish_reason": finish})


def test_strands_content_in_span_events_is_read_as_the_attributes_it_stands_for():
    # strands-agents 1.62 by default: gen_ai.user.message / gen_ai.choice / gen_ai.tool.message
    # span events, the message in the event's attributes as Strands' content blocks
    spans = _sdk_records(lambda tr: _strands_run(tr, latest=False))
    run = _one_run(spans)
    assert (run.prompt, run.answer) == ("Weather in Paris?", "It is 18C and sunny in Paris.")
    assert [(s.tool, s.arguments, s.result, s.call_id) for s in run.steps] == [
        ("get_weather", '{"city": "Paris"}', "18C, sunny", "call_0")]
    chats = [s for s in spans if s.operation == "chat"]
    assert [c.finish_reasons for c in chats] == [("tool_use",), ("end_turn",)]
    assert not any(c.missing & (MISSING_FINISH | MISSING_OUTPUT) for c in chats)
    (v,) = check_spans([spans], select(["abstention", "context_overflow", "unrecovered_tool_error", "policy"]))
    assert v.verdict == "clean"


def test_strands_latest_conventions_operation_details_events_and_text_blocks_are_read():
    # with gen_ai_latest_experimental: operation-details span events holding the messages, the
    # finish reason only inside each output message, the tool's result as text content blocks
    spans = _sdk_records(lambda tr: _strands_run(tr, latest=True))
    run = _one_run(spans)
    assert (run.prompt, run.answer) == ("Weather in Paris?", "It is 18C and sunny in Paris.")
    assert [(s.tool, s.result) for s in run.steps] == [("get_weather", "18C, sunny")]
    assert [s.finish_reasons for s in spans if s.operation == "chat"] == [("tool_use",), ("end_turn",)]


def test_a_span_attribute_wins_over_the_content_its_events_carry():
    def build(tracer):
        with tracer.start_as_current_span("chat", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": ["stop"]}) as s:
            s.add_event("gen_ai.choice", {"finish_reason": "length", "message": "cut"})
    (rec,) = _sdk_records(build)
    assert rec.finish_reasons == ("stop",) and rec.answer == "cut"


def test_a_max_tokens_exception_is_a_context_overflow_not_a_tool_error():
    # Strands raises MaxTokensReachedException on a "max_tokens" stop: the agent span and its
    # cycle fail with it. faultgate counts those as an unrecovered error; the run hit its token limit
    for latest in (False, True):
        spans = _sdk_records(lambda tr: _strands_run(tr, latest=latest, finish="max_tokens",
                                                     answer="It is 18C and sunny in Paris. The wind comes from the"))
        assert _fired(spans, "context_overflow") == ["context_overflow"]
        assert _fired(spans, "unrecovered_tool_error") == []


def test_a_framework_step_limit_error_on_a_step_span_is_no_tool_error():
    # llama-index-core 0.14 with OpenInference at max_iterations: the run's root (a CHAIN) and
    # the step that raised fail with "Max iterations of 12 reached!"; the tools all worked
    t = trace_id()
    limit = "WorkflowRuntimeError: Max iterations of 12 reached! Either something went wrong, or ..."
    root = span(t, "FunctionAgent.run", status=2, message=limit, attributes={"openinference.span.kind": "CHAIN"})
    searches = [_oi_tool(t, root.span_id, "search_docs", json.dumps({"query": f"refund {i}"}), "[]", 1 + i)
                for i in range(11)]
    step = span(t, "BaseWorkflowAgent.parse_agent_output", parent=root.span_id, start_s=20, status=2, message=limit,
                attributes={"openinference.span.kind": "CHAIN"})
    spans = [root, *searches, step]
    assert _one_run(spans).termination.startswith("step limit: WorkflowRuntimeError: Max iterations")
    (v,) = check_spans([spans], select(["search_loop", "unrecovered_tool_error"]))
    assert [r.check for r in v.fired] == ["search_loop"]
    other = span(t, "BaseWorkflowAgent.call_tool", parent=root.span_id, start_s=21, status=2, message="KeyError: 'x'",
                 attributes={"openinference.span.kind": "CHAIN"})
    assert _fired([root, *searches, step, other], "unrecovered_tool_error") == ["unrecovered_tool_error"]


def _li_llm(t, parent, name, start_s, **attrs):
    return span(t, name, parent=parent, start_s=start_s, attributes={
        "openinference.span.kind": "LLM", "llm.model_name": "m", **attrs})


def test_llamaindexs_three_llm_spans_per_model_call_leave_no_finish_reason_unrecorded():
    # openinference-instrumentation-llama-index 4.6: _prepare_chat_with_tools, the astream_chat
    # the agent called (no reply recorded: it is a stream) and the call inside it, which alone
    # holds the messages and llm.finish_reason
    t = trace_id()
    root = span(t, "FunctionAgent.run", attributes={"openinference.span.kind": "CHAIN", "output.value": "18C."})
    step = span(t, "BaseWorkflowAgent.run_agent_step", parent=root.span_id, start_s=1,
                attributes={"openinference.span.kind": "CHAIN"})
    prepare = _li_llm(t, step.span_id, "OpenAILike._prepare_chat_with_tools", 1.1,
                      **{"input.value": '{"tools": []}', "output.value": '{"messages": []}'})
    outer = _li_llm(t, step.span_id, "OpenAILike.astream_chat", 1.2, **{"input.value": '{"messages": []}'})
    inner = _li_llm(t, outer.span_id, "OpenAILike.astream_chat", 1.3, **{
        "input.value": '{"messages": []}', "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Weather?", "llm.finish_reason": "stop", "output.value": "assistant: 18C.",
        "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "18C."})
    assert [s.missing for s in (prepare, outer, inner)] == [0, 0, 0]
    spans = [root, step, prepare, outer, inner]
    assert _undecided(spans, "context_overflow") == [] and _fired(spans, "context_overflow") == []
    # a call whose content was hidden (OPENINFERENCE_HIDE_INPUTS/OUTPUTS) still counts as unrecorded
    hidden = _li_llm(t, step.span_id, "OpenAILike.astream_chat", 1.4, **{"input.value": "__REDACTED__"})
    assert hidden.missing and _undecided([root, step, hidden], "context_overflow") == ["context_overflow"]
    # and so does one that recorded only its token counts: it made a call
    counted = _li_llm(t, step.span_id, "ChatCompletion", 1.5, **{"llm.token_count.prompt": 812})
    assert counted.missing & MISSING_FINISH


def test_a_llamaindex_tool_output_reads_as_its_raw_output_and_an_error_as_an_error():
    # openinference-instrumentation-llama-index 4.6: a FunctionTool's output.value is its ToolOutput
    t = trace_id()
    root = agent(t, answer="No results.")

    def output(raw, failed):
        return json.dumps({"blocks": [{"text": raw}], "tool_name": "search_docs", "raw_input": {"args": [], "kwargs": {}},
                           "raw_output": raw, "is_error": failed})
    ok = _oi_tool(t, root.span_id, "search_docs", '{"kwargs": {"query": "x"}}', output("[]", False), 1)
    bad = _oi_tool(t, root.span_id, "fetch_invoice", '{"kwargs": {"invoice_id": "INV-9"}}',
                   output("invoice service unavailable", True), 2)
    assert [s.result for s in _one_run([root, ok, bad]).steps] == ["[]", "Error: invoice service unavailable"]


def test_openllmetrys_llamaindex_tool_call_task_span_is_a_step_with_its_result():
    # opentelemetry-instrumentation-llamaindex 0.62: the agent's call_tool step is a task span
    # with tool.name and tool.arguments, the ToolCallResult in traceloop.entity.output
    t = trace_id()
    root = span(t, "FunctionAgent.workflow", attributes={"traceloop.span.kind": "workflow"})

    def call_tool(i, raw, failed):
        return span(t, "BaseWorkflowAgent.task", parent=root.span_id, start_s=1 + i, attributes={
            "traceloop.span.kind": "task", "traceloop.entity.name": "BaseWorkflowAgent.task",
            "tool.name": "fetch_invoice", "tool.arguments": '{"invoice_id": "INV-9"}',
            "traceloop.entity.output": json.dumps({
                "tool_name": "fetch_invoice", "tool_kwargs": {"invoice_id": "INV-9"}, "tool_id": f"call_{i}",
                "tool_output": {"blocks": [{"block_type": "text", "text": raw}], "tool_name": "fetch_invoice",
                                "raw_input": {"invoice_id": "INV-9"}, "raw_output": raw, "is_error": failed},
                "return_direct": False})})
    spans = [root, call_tool(0, "invoice service unavailable (HTTP 503)", True)]
    run = _one_run(spans)
    assert [(s.tool, s.arguments, s.result, s.call_id) for s in run.steps] == [
        ("fetch_invoice", '{"invoice_id": "INV-9"}', "Error: invoice service unavailable (HTTP 503)", "call_0")]
    assert _fired(spans, "unrecovered_tool_error") == ["unrecovered_tool_error"]
    assert _fired([*spans, call_tool(1, "INV-9: 120.00 EUR, paid", False)], "unrecovered_tool_error") == []


def test_a_run_with_no_answer_whose_last_model_call_asked_for_a_tool_ended_at_its_step_limit():
    # LlamaIndex at max_iterations through OpenLLMetry: no status, no exception recorded; the last
    # model call stopped to call a tool and nothing answered
    t = trace_id()
    root = span(t, "FunctionAgent.workflow", attributes={"traceloop.span.kind": "workflow"})
    spans = [root]
    for i in range(11):
        spans.append(span(t, "OpenAILike.task", parent=root.span_id, start_s=1 + 2 * i, attributes={
            "gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": ["tool_call"],
            "gen_ai.input.messages": "[]", "gen_ai.output.messages": "[]"}))
        spans.append(tool(t, root.span_id, "search_docs", {"query": f"refund {i}"}, "[]", start_s=2 + 2 * i))
    spans.append(span(t, "OpenAILike.task", parent=root.span_id, start_s=30, attributes={
        "gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": ["tool_call"],
        "gen_ai.input.messages": "[]", "gen_ai.output.messages": "[]"}))
    run = _one_run(spans)
    assert run.termination == "step limit: the agent's last output was a tool call, not an answer"
    assert _fired(spans, "search_loop") == ["search_loop"]
    answered = [*spans, span(t, "OpenAILike.task", parent=root.span_id, start_s=40, attributes={
        "gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": ["stop"], "gen_ai.input.messages": "[]",
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "None."}]}])})]
    assert _one_run(answered).termination == ""


def test_a_strands_swarm_is_one_run_with_its_agents_inside():
    # strands-agents 1.62's Swarm: an invoke_swarm span above the agents that hand off to each other
    t = trace_id()
    swarm = span(t, "invoke_swarm", attributes={"gen_ai.operation.name": "invoke_swarm"})
    triage = agent(t, name="triage", answer="Handing you over.")
    triage = triage._replace(parent_id=swarm.span_id)
    specialist = agent(t, name="weather_specialist", answer="It is 18C in Paris.")._replace(parent_id=swarm.span_id)
    call = tool(t, specialist.span_id, "get_weather", {"city": "Paris"}, "18C", start_s=1)
    assert swarm.operation == "invoke_agent"
    run = _one_run([swarm, triage, specialist, call])
    assert run.root.span_id == swarm.span_id and [s.tool for s in run.steps] == ["get_weather"]


def test_a_dspy_tool_span_is_named_after_its_tool_and_react_finishing_is_no_step():
    # openinference-instrumentation-dspy 0.1.48: a Tool's span is "<tool>.__call__" with no
    # tool.name, its output a JSON string; ReAct ends a trajectory by calling its own finish tool
    t = trace_id()
    root = span(t, "ReAct.forward", attributes={"openinference.span.kind": "CHAIN",
                                                "output.value": json.dumps({"answer": "18C."})})

    def dspy_tool(name, kwargs, output, start_s):
        return span(t, f"{name}.__call__", parent=root.span_id, start_s=start_s, attributes={
            "openinference.span.kind": "TOOL", "input.value": json.dumps({"kwargs": kwargs}),
            "input.mime_type": "application/json", "output.value": json.dumps(output),
            "output.mime_type": "application/json"})
    spans = [root, *[dspy_tool("job_status", {"job_id": "42"}, "status: pending", 1 + i) for i in range(2)],
             *[dspy_tool("finish", {}, "Completed.", 3 + i) for i in range(3)]]
    run = _one_run(spans)
    assert [(s.tool, s.result) for s in run.steps] == [("job_status", "status: pending")] * 2
    assert _fired(spans, "repeated_call") == []


def test_a_call_no_later_model_input_answers_has_its_result_not_captured():
    # openinference-instrumentation-haystack 0.1.46: the Agent's tools run without a span and
    # the tool message is recorded with its role alone: what the calls returned is unseen, so
    # three identical calls are no evidence of a repeat, and no error can be ruled out
    t = trace_id()
    root = span(t, "Pipeline.run", attributes={"openinference.span.kind": "CHAIN"})
    chats = []
    for i in range(3):
        attrs = {"openinference.span.kind": "LLM",
                 "llm.output_messages.0.message.role": "assistant",
                 "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "job_status",
                 "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"job_id": "42"}'}
        attrs.update({f"llm.input_messages.{k}.message.role": "tool" for k in range(i)})
        chats.append(span(t, "OpenAIChatGenerator.run", parent=root.span_id, start_s=1 + i, attributes=attrs))
    spans = [root, *chats]
    run = _one_run(spans)
    assert [s.tool for s in run.steps] == ["job_status"] * 3 and all(s.missing for s in run.steps)
    assert _fired(spans, "repeated_call") == []
    assert set(_undecided(spans, "repeated_call") + _undecided(spans, "unrecovered_tool_error")) == {
        "repeated_call", "unrecovered_tool_error"}


def test_beeai_tool_event_spans_are_no_calls_and_a_failed_agents_output_is_its_error():
    # openinference-instrumentation-beeai 0.1.30: a tool's error event is a zero-length TOOL
    # span named "error" under the tool's span; at max_iterations the agent span fails with no
    # status message and writes the AgentError as its output
    t = trace_id()
    budget = "AgentError(beeai_framework.agents.errors): Agent was not able to resolve the task in 13 iterations."
    root = span(t, "ToolCallingAgent", status=2, attributes={
        "openinference.span.kind": "AGENT", "input.value": json.dumps({"input": "Refund policy?"}),
        "output.value": budget})
    searches = []
    for i in range(12):
        call = _oi_tool(t, root.span_id, "search_docs", json.dumps({"input": {"query": f"r{i}"}}), "[]", 1 + i)
        searches.append(call)
        if i == 0:
            searches.append(span(t, "error", parent=call.span_id, start_s=1.5, end_s=1.5, status=2, attributes={
                "openinference.span.kind": "TOOL", "input.value": json.dumps({"error": "Tool Error"})}))
    spans = [root, *searches]
    run = _one_run(spans)
    assert [s.tool for s in run.steps] == ["search_docs"] * 12
    assert run.answer == "" and run.termination == f"step limit: {budget}"
    assert _fired(spans, "search_loop") == ["search_loop"]
    other = span(t, "ToolCallingAgent", status=2, attributes={
        "openinference.span.kind": "AGENT", "output.value": "ValueError(builtins): bad input"})
    assert _one_run([other]).answer == "" and _one_run([other]).termination == ""
