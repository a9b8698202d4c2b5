"""Agent runs made with the OpenTelemetry SDK as util-genai's event_only mode makes them:
spans without content, one ``gen_ai.client.inference.operation.details`` log record per
model call carrying the messages, correlated with its chat span."""
from __future__ import annotations

import json

from opentelemetry._logs import LogRecord
from opentelemetry.trace import set_span_in_context

DETAILS = "gen_ai.client.inference.operation.details"


def event_only_run(tracer, logger, agent: str, repeats: int, answer: str) -> int:
    """One tool loop as util-genai writes it with event_only content: no content on the
    spans; one operation-details log record per model call. Returns log records emitted."""
    history = [{"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}]
    emitted = 0

    def chat(outputs, finish):
        nonlocal emitted
        with tracer.start_as_current_span("chat m", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                "gen_ai.response.finish_reasons": [finish]}) as s:
            logger.emit(LogRecord(event_name=DETAILS, context=set_span_in_context(s), attributes={
                "gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": [finish],
                "gen_ai.input.messages": [dict(m) for m in history], "gen_ai.output.messages": outputs}))
            emitted += 1

    with tracer.start_as_current_span(f"invoke_agent {agent}", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}):
        for i in range(repeats):
            call = {"type": "tool_call", "id": f"call_{i}", "name": "get_weather",
                    "arguments": json.dumps({"city": "Paris"})}
            chat([{"role": "assistant", "parts": [call]}], "tool_calls")
            history.append({"role": "assistant", "parts": [call]})
            with tracer.start_as_current_span("execute_tool get_weather", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.id": f"call_{i}"}):
                pass
            history.append({"role": "tool", "parts": [{"type": "tool_call_response", "id": f"call_{i}",
                                                       "response": '{"temp": 21}'}]})
        chat([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}], "stop")
    return emitted


def tool_run(tracer, agent: str, tools: list[tuple[str, dict, str, bool]], *,
             prompt: str = "help me with README.md", answer: str = "done", finish: bool = True,
             tokens: bool = False) -> tuple[str, list[str]]:
    """One agent run as an instrumented agent sends it, content on the spans: per tool call
    (name, arguments, result, ok) a model span, then the tool span (status error when not
    ok); the answer on the root. ``finish=False``: the model spans record no finish reasons.
    Returns the trace id and the tool spans' ids, in call order (hex, as OTLP/JSON writes them)."""
    from opentelemetry.trace import Status, StatusCode

    tool_spans = []
    with tracer.start_as_current_span(f"invoke_agent {agent}", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent, "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": prompt}]}])}) as root:
        for name, args, result, ok in tools:
            chat = {"gen_ai.operation.name": "chat"}
            if finish:
                chat["gen_ai.response.finish_reasons"] = ["tool_calls"]
            if tokens:
                chat.update({"gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 30})
            with tracer.start_as_current_span("chat m", attributes=chat):
                pass
            with tracer.start_as_current_span(f"execute_tool {name}", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                    "gen_ai.tool.call.arguments": json.dumps(args), "gen_ai.tool.call.result": result}) as s:
                if not ok:
                    s.set_status(Status(StatusCode.ERROR, "failed"))
                tool_spans.append(format(s.get_span_context().span_id, "016x"))
        root.set_attribute("gen_ai.output.messages", json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]))
    return format(root.get_span_context().trace_id, "032x"), tool_spans
