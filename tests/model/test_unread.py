"""The honesty floor (issue 40): spans that carry agent work no convention read are told by
the reader (``UNREAD_*``, native/src/read/unread.rs), and a check whose input they leave
incomplete is undecided, never passed (model/unread.py, ``Check.held_to_what_was_read``).

The unknown vocabulary here is made up on the Vercel AI SDK's pattern (``acme.toolCall`` with
``acme.toolCall.args``; the Vercel SDK's own is read since, read/vercel.rs): the reader
recognises the work by words, not by vendor."""
from __future__ import annotations

import json

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.registry import select
from faultgate_stream.model.records import UNREAD_MODEL, UNREAD_OUTPUT, UNREAD_OUTPUT_KEY, UNREAD_TOOL
from faultgate_stream.model.run import Run
from faultgate_stream.model.unread import STEPS
from faultgate_stream.model.verdict import CheckResult
from faultgate_stream.pipeline import assemble_runs, check_spans
from faultgate_stream.testing import agent, span, tool, trace_id

BUILT_IN = ["search_loop", "abstention", "policy", "repeated_call", "unrecovered_tool_error", "context_overflow"]


def unknown_tool_loop(calls: int = 3, *, answer: str = "") -> list:
    """A generateText loop as an unknown convention writes it: a root, a model call per
    turn, a tool call between them, every result empty."""
    t = trace_id()
    root = span(t, "acme.generateText", end_s=calls + 2, attributes={
        "acme.operationId": "acme.generateText", "acme.model.id": "m", "acme.prompt": '{"prompt":"Find our refund policy"}',
        **({"acme.response.text": answer} if answer else {})})
    out = [root]
    for i in range(calls):
        out.append(span(t, "acme.generateText.doGenerate", parent=root.span_id, start_s=1 + i, attributes={
            "acme.model.id": "m", "acme.usage.inputTokens": 40, "acme.response.finishReason": "tool-calls",
            "acme.response.toolCalls": json.dumps([{"toolCallId": f"c{i}", "toolName": "search_docs", "input": "{}"}])}))
        out.append(span(t, "acme.toolCall", parent=root.span_id, start_s=1.5 + i, attributes={
            "acme.toolCall.name": "search_docs", "acme.toolCall.id": f"c{i}", "acme.toolCall.args": '{"query": "refunds"}',
            "acme.toolCall.result": "[]"}))
    return out


def _verdict(spans: list, checks: list | None = None):
    (v,) = check_spans([spans], checks if checks is not None else select(BUILT_IN))
    return v


def test_the_reader_tells_tool_calls_model_calls_and_an_answer_in_a_vocabulary_it_does_not_read():
    root, model, call = unknown_tool_loop(1, answer="It is sunny.")
    assert model.missing & UNREAD_MODEL and not model.missing & UNREAD_TOOL
    assert call.missing & UNREAD_TOOL and not call.missing & UNREAD_OUTPUT  # a tool's result is no answer
    assert root.missing & UNREAD_OUTPUT and root.attrs[UNREAD_OUTPUT_KEY] == "acme.response.text"


def test_a_run_whose_tool_calls_were_not_read_is_undecided_naming_them_never_clean():
    v = _verdict(unknown_tool_loop(12))
    assert v.verdict == "undecided" and v.steps == 0
    by = {r.check: r for r in v.results}
    for check in ("search_loop", "policy", "repeated_call", "unrecovered_tool_error"):
        assert by[check].undecided and "12 spans named acme.toolCall not read as tool calls" in by[check].reason
    assert by["context_overflow"].undecided and "12 spans named acme.generateText.doGenerate" in by["context_overflow"].reason
    # no answer anywhere: the model calls not read may hold it (their tool calls are no answer)
    assert by["abstention"].reason == ("undecided: the answer was not read: 12 spans named "
                                       "acme.generateText.doGenerate not read as model calls")
    assert dict(v.unread) == {"tool": 12, "model": 12}


def test_an_answer_an_unknown_root_carries_is_named_with_its_key():
    spans = unknown_tool_loop(1, answer="I could not find the refund policy.")
    (run,) = assemble_runs(spans)
    assert run.answer == ""
    assert run.unread.reasons["answer"] == ("the answer was not read: span 'acme.generateText' carries output in "
                                            "acme.response.text, which no convention reads")


def test_a_check_that_reads_only_what_was_read_still_passes_and_a_finding_stands():
    t = trace_id()
    root = agent(t, prompt="Show the accounts", answer="Here they are.")
    spans = [root, tool(t, root.span_id, "read_file", {"path": "../../etc/passwd"}, "root:x:0:0"),
             span(t, "acme.tool", parent=root.span_id, start_s=3, attributes={"acme.tool.name": "lookup"})]
    v = _verdict(spans, select(["abstention", "policy", "repeated_call"]))
    by = {r.check: r for r in v.results}
    assert by["policy"].fired  # fired on the call that was read
    assert by["repeated_call"].undecided and "1 span named acme.tool not read as a tool call" in by["repeated_call"].reason
    assert not by["abstention"].undecided and not by["abstention"].fired  # the answer was read: it does not depend
    assert v.verdict == "failed"


def test_a_span_around_or_inside_a_read_tool_call_is_part_of_it():
    t = trace_id()
    root = agent(t, prompt="Weather?", answer="Sunny.")
    wrapper = span(t, "running tools", parent=root.span_id, start_s=1, end_s=3, attributes={"tools": ["get_weather"]})
    call = tool(t, wrapper.span_id, "get_weather", {"city": "Paris"}, "sunny", start_s=1.5)
    inner = span(t, "tool.invoke", parent=call.span_id, start_s=1.6, attributes={"acme.tool.name": "get_weather"})
    assert wrapper.missing & UNREAD_TOOL and inner.missing & UNREAD_TOOL
    (run,) = assemble_runs([root, wrapper, call, inner])
    assert not run.unread
    assert _verdict([root, wrapper, call, inner]).verdict == "clean"


def test_spans_of_no_agent_work_leave_a_run_clean():
    t = trace_id()
    root = agent(t, prompt="Weather?", answer="Sunny.")
    spans = [root, tool(t, root.span_id, "get_weather", {"city": "Paris"}, "sunny"),
             span(t, "POST", parent=root.span_id, start_s=2, attributes={"http.request.method": "POST",
                                                                         "http.response.status_code": 200}),
             span(t, "SELECT orders", parent=root.span_id, start_s=3, attributes={"db.statement": "select 1"})]
    assert not any(s.missing for s in spans)
    assert _verdict(spans).verdict == "clean"


def test_a_check_that_says_nothing_of_what_it_reads_is_held_to_every_input_and_one_that_reads_nothing_to_none():
    class Plugin(Check):
        name = "plugin"
        description = "passes everything"

        def finish(self, state, run: Run) -> CheckResult:
            return self.result(False, "fine")

    class Outside(Plugin):
        name = "outside"
        reads = ()

    v = _verdict(unknown_tool_loop(2), [Plugin(), Outside()])
    by = {r.check: r for r in v.results}
    assert by["plugin"].undecided and "not read as tool calls" in by["plugin"].reason
    assert not by["outside"].undecided
    assert Plugin.reads[0] == STEPS


def test_the_reader_with_a_projection_tells_the_same_from_keys_it_leaves_out():
    from faultgate_stream.read import otlp_json, otlp_proto
    from faultgate_stream.read.projection import Projection

    doc = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [
        {"traceId": "ab" * 16, "spanId": "01" * 8, "name": "acme.generateText", "startTimeUnixNano": "1",
         "endTimeUnixNano": "9", "attributes": [{"key": "acme.response.text", "value": {"stringValue": "Done."}},
                                                {"key": "acme.model.id", "value": {"stringValue": "m"}}]},
        {"traceId": "ab" * 16, "spanId": "02" * 8, "parentSpanId": "01" * 8, "name": "step", "startTimeUnixNano": "2",
         "endTimeUnixNano": "3", "attributes": [{"key": "acme.toolCall.args", "value": {"stringValue": "{}"}}]}]}]}]}
    request, _, problem = otlp_json.to_request(doc)
    assert not problem
    data = request.SerializeToString()
    projection = Projection(["gen_ai.agent.name", UNREAD_OUTPUT_KEY])
    full, projected = otlp_proto.read(data).spans, otlp_proto.read(data, projection).spans
    assert [s.missing for s in projected] == [s.missing for s in full] == [UNREAD_MODEL | UNREAD_OUTPUT, UNREAD_TOOL]
    assert "acme.response.text" not in projected[0].attrs and projected[0].attrs[UNREAD_OUTPUT_KEY] == "acme.response.text"


def test_a_finding_that_rests_on_an_absence_is_undecided_when_the_work_that_may_hold_it_was_not_read():
    """A failed call read as a step, its retry in a vocabulary no reader knows: "never
    succeeded afterwards" is not known, so unrecovered_tool_error does not fire; a denied
    argument seen on a read call still does."""
    t = trace_id()
    root = agent(t, prompt="How much is invoice INV-9?", answer="Invoice INV-9 is 120 EUR.")
    spans = [root, tool(t, root.span_id, "fetch_invoice", {"invoice_id": "INV-9", "path": "../../etc/passwd"}, "",
                        status=2),
             span(t, "acme.toolCall", parent=root.span_id, start_s=3, attributes={
                 "acme.toolCall.name": "fetch_invoice", "acme.toolCall.args": '{"invoice_id": "INV-9"}',
                 "acme.toolCall.result": "120 EUR"})]
    by = {r.check: r for r in _verdict(spans).results}
    assert by["unrecovered_tool_error"].undecided
    assert "1 span named acme.toolCall not read as a tool call" in by["unrecovered_tool_error"].reason
    assert by["policy"].fired


def test_an_unrecovered_error_stands_when_no_unread_work_began_after_it_and_is_undecided_when_some_did():
    t = trace_id()
    root = agent(t, answer="done", end_s=20)
    failed = tool(t, root.span_id, "refund", {"id": 1}, "Error: refund service down", start_s=5, status=2)
    before = span(t, "acme.toolCall", parent=root.span_id, start_s=2, attributes={
        "acme.toolCall.name": "lookup", "acme.toolCall.args": "{}", "acme.toolCall.result": "ok"})
    after = span(t, "acme.toolCall", parent=root.span_id, start_s=8, attributes={
        "acme.toolCall.name": "refund", "acme.toolCall.args": "{}", "acme.toolCall.result": "ok"})
    checks = select(["unrecovered_tool_error"])
    (r,) = _verdict([root, before, failed], checks).results
    assert r.fired, r.reason  # the unread call came first: it cannot be the recovery
    (r,) = _verdict([root, before, failed, after], checks).results
    assert r.undecided and "not read as tool calls" in r.reason, r.reason  # it may be
