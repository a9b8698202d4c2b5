"""LangGraph / LangChain message lists -> spans: ``graph.invoke(...)["messages"]`` serialized,
as ``model_dump()`` dicts with a ``type`` or as ``dumpd()`` constructor objects, given as a
list or under ``messages``.

Steps are the AI messages' ``tool_calls`` in list order, taken when the call is issued, so
a call that never returned still appears; the tool message with the same ``tool_call_id``
carries its result, and ``status: "error"`` there means it failed. ``invalid_tool_calls``
(arguments that did not parse, so no tool ran) are failed steps. The first human message is
the prompt, the last AI message's text the answer.

Messages carry no times and no trace id: each span starts at its position (nanoseconds after
the epoch), so start-time order is list order and no duration is implied, and the trace id
is derived from the content.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.read.formats.shared import (
    agent_root, derived_trace_id, error_text, measures, records, span, tool_span,
)
from faultgate_stream.read.payload import tool_payload

# The field names this format's records carry: how close an unrecognised file came to it.
SIGNATURE = frozenset({"messages", "type", "content", "tool_calls", "tool_call_id", "additional_kwargs", "response_metadata"})
NEEDS = (("type", "kwargs.type"), ("content", "kwargs.content"))

# model_dump() writes the short type; chunks and dumpd() objects name the class.
TYPES = {"human": "human", "ai": "ai", "tool": "tool", "system": "system", "function": "function",
         "chat": "chat", "remove": "remove",
         "HumanMessage": "human", "AIMessage": "ai", "ToolMessage": "tool", "SystemMessage": "system",
         "FunctionMessage": "function", "ChatMessage": "chat", "RemoveMessage": "remove",
         "HumanMessageChunk": "human", "AIMessageChunk": "ai", "ToolMessageChunk": "tool",
         "SystemMessageChunk": "system", "FunctionMessageChunk": "function", "ChatMessageChunk": "chat"}


@dataclass
class _Call:
    """A step as it is being assembled: issued by an AI message, completed by a tool message."""

    name: str
    arguments: Any
    call_id: str
    start_ns: int
    result: Any = ""
    ok: bool = True
    error: str = ""


def _normal(m: Any) -> dict[str, Any] | None:
    """A message as a dict with its short ``type``; None when it is not a LangChain message."""
    if not isinstance(m, dict):
        return None
    if m.get("lc") == 1 and m.get("type") == "constructor":
        cls = m.get("id")[-1] if isinstance(m.get("id"), list) and m.get("id") else None
        m = {**m["kwargs"], "type": cls} if isinstance(m.get("kwargs"), dict) else {}
    kind = TYPES.get(m.get("type")) if isinstance(m.get("type"), str) else None
    return {**m, "type": kind} if kind and "content" in m else None


def _messages(doc: Any) -> list[dict[str, Any] | None]:
    return [_normal(m) for m in records(doc, "messages")]


def detect(doc: Any) -> bool:
    msgs = _messages(doc)
    return bool(msgs) and all(m is not None for m in msgs) and any(m["type"] == "ai" for m in msgs)


def _text(content: Any) -> str:
    """A message's text: the string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p if isinstance(p, str) else str(p.get("text", "")) for p in content
                 if isinstance(p, str) or (isinstance(p, dict) and p.get("type") == "text")]
        return " ".join(p for p in parts if p)
    return ""


def _result(content: Any) -> str:
    """A tool message's result: its text, else (a list of non-text parts) the content as JSON."""
    text = _text(content)
    return text if text or not content else tool_payload(content)


def _list(v: Any, where: str) -> list[dict[str, Any]]:
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
        raise InputError(f"{where}: expected a list of objects")
    return v


def read(doc: Any) -> list[SpanRecord]:
    normal = _messages(doc)
    msgs = [m for m in normal if m is not None]
    if not msgs or len(msgs) != len(normal):
        raise InputError("not a list of LangChain messages")
    tid = derived_trace_id(doc)
    clock = itertools.count(2)  # the root starts at 1
    calls: list[_Call] = []
    by_id: dict[str, _Call] = {}
    chats: list[SpanRecord] = []
    for i, m in enumerate(msgs):
        if m["type"] == "ai":
            usage = m.get("usage_metadata") if isinstance(m.get("usage_metadata"), dict) else {}
            meta = m.get("response_metadata") if isinstance(m.get("response_metadata"), dict) else {}
            attrs = measures(input_tokens=usage.get("input_tokens"), output_tokens=usage.get("output_tokens"),
                             finish_reason=meta.get("finish_reason") or meta.get("stop_reason"))
            chats.append(span(tid, f"message-{i}", "root", "chat", next(clock), 0, "chat", attrs=attrs))
            for tc in _list(m.get("tool_calls"), f"messages[{i}].tool_calls"):
                call = _Call(str(tc.get("name") or ""), tc.get("args"), str(tc.get("id") or ""), next(clock))
                if call.call_id:  # some providers omit ids: an empty id must pair with nothing
                    by_id[call.call_id] = call
                calls.append(call)
            for tc in _list(m.get("invalid_tool_calls"), f"messages[{i}].invalid_tool_calls"):
                calls.append(_Call(str(tc.get("name") or ""), tc.get("args"), str(tc.get("id") or ""), next(clock),
                                   ok=False, error=error_text(tc.get("error")) or "invalid tool call"))
        elif m["type"] == "tool" and str(m.get("tool_call_id") or "") in by_id:
            call = by_id[str(m["tool_call_id"])]
            call.result = _result(m.get("content"))
            call.ok = m.get("status", "success") != "error"

    ai = [m for m in msgs if m["type"] == "ai"]
    human = next((m for m in msgs if m["type"] == "human"), None)
    name = next((str(m["name"]) for m in ai if m.get("name")), "langgraph")
    root = agent_root(tid, "root", name, 1, 0, prompt=_text(human["content"]) if human else "",
                      answer=_text(ai[-1]["content"]) if ai else "")
    tools = [tool_span(tid, f"call-{n}", "root", c.name, c.start_ns, 0, c.arguments, c.result, ok=c.ok,
                       error=c.error, call_id=c.call_id) for n, c in enumerate(calls)]
    return [root, *chats, *tools]
