"""One tool-loop agent run written the way the official OpenAI instrumentation
(opentelemetry-instrumentation-openai-v2 over opentelemetry-util-genai 1.1b0) writes it, in
each content mode, as OTLP/JSON: traces, and the logs that carry content in ``event_only``.

The shapes are util-genai's: content on spans as JSON strings (``gen_ai.input.messages``,
``gen_ai.output.messages``, ``gen_ai.tool.call.arguments`` / ``.result``); in events, one
``gen_ai.client.inference.operation.details`` log record per model call with the same
messages as structured values (a list of ``{role, parts}`` maps), parented to the chat span
by trace and span id; tool spans never carry content in event_only. ``legacy`` writes the
older per-message events (``gen_ai.user.message``, ``gen_ai.tool.message``,
``gen_ai.choice``) with the content in the body.
"""
from __future__ import annotations

import json
from itertools import count
from typing import Any

MODES = ("span_only", "event_only", "span_and_event", "no_content", "legacy")
_ids = count(0x5100)
T0 = 1_790_000_000_000_000_000


def any_value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [any_value(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": any_value(x)} for k, x in v.items()]}}
    if v is None:
        return {}
    return {"stringValue": str(v)}


def _attrs(d: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": any_value(v)} for k, v in d.items()]


def tool_loop(mode: str, *, city: str = "Paris", result: str = '{"temp": 21}', answer: str = "21 degrees in Paris.",
              repeats: int = 1, finish_last: str = "stop") -> tuple[dict[str, Any], dict[str, Any]]:
    """(traces, logs) of one run: ``repeats`` rounds of chat -> get_weather, then a chat
    that answers. ``logs`` has no records in the modes that put none there."""
    n = next(_ids)
    tid = f"{n:032x}"
    root = f"{n:08x}00000001"
    spans, logs = [], []
    on_span = mode in ("span_only", "span_and_event")
    on_event = mode in ("event_only", "span_and_event")
    history: list[dict[str, Any]] = [{"role": "user", "parts": [{"type": "text", "content": f"Weather in {city}?"}]}]
    t = T0 + n * 10**9

    def add_span(sid: str, name: str, start: int, attrs: dict[str, Any]) -> None:
        spans.append({"traceId": tid, "spanId": sid, "parentSpanId": root, "name": name,
                      "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 50_000_000),
                      "kind": 3 if name.startswith("chat") else 1, "attributes": _attrs(attrs)})

    def chat(k: int, start: int, outputs: list[dict[str, Any]], finish: str) -> None:
        sid = f"{n:08x}{k:08x}"
        attrs = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "m",
                 "gen_ai.response.finish_reasons": [finish]}
        if on_span:
            attrs["gen_ai.input.messages"] = json.dumps(history)
            attrs["gen_ai.output.messages"] = json.dumps(outputs)
        add_span(sid, "chat m", start, attrs)
        if on_event:
            ev = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.provider.name": "openai",
                  "gen_ai.response.finish_reasons": [finish], "gen_ai.input.messages": list(history),
                  "gen_ai.output.messages": outputs}
            logs.append({"timeUnixNano": str(start + 50_000_000), "eventName": "gen_ai.client.inference.operation.details",
                         "traceId": tid, "spanId": sid, "attributes": _attrs(ev)})
        if mode == "legacy":
            for j, m in enumerate(history):
                part = m["parts"][0]
                if m["role"] == "user":
                    name, body = "gen_ai.user.message", {"content": part["content"]}
                elif m["role"] == "tool":
                    name, body = "gen_ai.tool.message", {"content": part["response"], "id": part["id"]}
                else:
                    name, body = "gen_ai.assistant.message", {"tool_calls": [
                        {"id": p["id"], "type": "function",
                         "function": {"name": p["name"], "arguments": json.dumps(p["arguments"])}} for p in m["parts"]]}
                logs.append({"timeUnixNano": str(start + j), "attributes": _attrs({"event.name": name}),
                             "eventName": name, "traceId": tid, "spanId": sid, "body": any_value(body)})
            out = outputs[0]
            msg: dict[str, Any] = {"role": "assistant"}
            texts = [p["content"] for p in out["parts"] if p["type"] == "text"]
            if texts:
                msg["content"] = texts[0]
            calls = [{"id": p["id"], "type": "function", "function": {"name": p["name"], "arguments": json.dumps(p["arguments"])}}
                     for p in out["parts"] if p["type"] == "tool_call"]
            if calls:
                msg["tool_calls"] = calls
            logs.append({"timeUnixNano": str(start + 40_000_000), "eventName": "gen_ai.choice",
                         "traceId": tid, "spanId": sid,
                         "body": any_value({"index": 0, "finish_reason": finish, "message": msg})})

    k = 2
    at = t + 100_000_000
    for i in range(repeats):
        call = {"type": "tool_call", "id": f"call_{n}_{i}", "name": "get_weather", "arguments": {"city": city}}
        outputs = [{"role": "assistant", "parts": [call], "finish_reason": "tool_calls"}]
        chat(k, at, outputs, "tool_calls")
        history.append(outputs[0] | {})
        history[-1].pop("finish_reason", None)
        tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": call["id"], "gen_ai.tool.type": "function"}
        if on_span:
            tool["gen_ai.tool.call.arguments"] = json.dumps(call["arguments"])
            tool["gen_ai.tool.call.result"] = result
        add_span(f"{n:08x}{k + 1:08x}", "execute_tool get_weather", at + 60_000_000, tool)
        history.append({"role": "tool", "parts": [{"type": "tool_call_response", "id": call["id"], "response": result}]})
        k += 2
        at += 200_000_000
    final = [{"role": "assistant", "parts": [{"type": "text", "content": answer}] if answer else [],
              "finish_reason": finish_last}]
    chat(k, at, final, finish_last)
    spans.insert(0, {"traceId": tid, "spanId": root, "name": "invoke_agent weather", "kind": 1,
                     "startTimeUnixNano": str(t), "endTimeUnixNano": str(at + 100_000_000),
                     "attributes": _attrs({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather",
                                           "faultgate.scenario": f"weather-{city}"})})
    resource = {"attributes": _attrs({"service.name": "weather-agent"})}
    traces = {"resourceSpans": [{"resource": resource, "scopeSpans": [
        {"scope": {"name": "opentelemetry.instrumentation.openai_v2"}, "spans": spans}]}]}
    logs_doc = {"resourceLogs": [{"resource": resource, "scopeLogs": [
        {"scope": {"name": "opentelemetry.instrumentation.openai_v2"}, "logRecords": logs}]}]}
    return traces, logs_doc


def merge(docs: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """Several OTLP/JSON documents of one signal as one (``key``: resourceSpans or resourceLogs)."""
    return {key: [r for d in docs for r in d.get(key, [])]}
