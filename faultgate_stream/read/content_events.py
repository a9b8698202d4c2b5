"""GenAI content carried in span events -> the span's content attributes.

Some instrumentations record a span's messages as events of the span instead of its
attributes. AWS Strands Agents' own tracer does both ways the GenAI conventions have said:

- by default, the older per-message events with the message in the event's attributes:
  ``gen_ai.user.message`` / ``gen_ai.assistant.message`` / ``gen_ai.tool.message``
  (``content``: a JSON list of Strands' content blocks, or plain text), ``gen_ai.choice``
  (``message``, ``finish_reason``); on a tool span ``gen_ai.tool.message`` holds the call's
  arguments and ``id``, and ``gen_ai.choice`` its result;
- with ``gen_ai_latest_experimental``, ``gen_ai.client.inference.operation.details`` events,
  each holding ``gen_ai.input.messages`` / ``gen_ai.output.messages`` /
  ``gen_ai.system_instructions`` as the span attributes would (a span's several events add
  up, in order).

The older convention's ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` events
carry ``gen_ai.prompt`` / ``gen_ai.completion`` as they are.

The readers hand ``content_attributes`` a span's events of these names (``NAMES``); what it
returns is set on the span where the span has no attribute of that name, so the
conventions read event-borne content as they read attributes (the span's own win).
Strands' content blocks become GenAI parts: ``{"text"}`` a text part, ``{"toolUse"}`` a
``tool_call``, ``{"toolResult"}`` a ``tool_call_response`` (its status kept, so a failed
result reads as an error), and a tool result's blocks its text.
"""
from __future__ import annotations

import json
from typing import Any

DETAILS = "gen_ai.client.inference.operation.details"
MESSAGE_EVENTS = {"gen_ai.user.message": "user", "gen_ai.assistant.message": "assistant",
                  "gen_ai.tool.message": "tool"}
CHOICE = "gen_ai.choice"
LEGACY = {"gen_ai.content.prompt": "gen_ai.prompt", "gen_ai.content.completion": "gen_ai.completion"}
NAMES = frozenset({DETAILS, CHOICE, *MESSAGE_EVENTS, *LEGACY})
# the message lists a details event may hold, each added up over the span's events
LISTS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")
EXECUTE_TOOL = "execute_tool"


def _decoded(v: Any) -> Any:
    """A JSON text decoded (the value as it is when it is not JSON)."""
    if isinstance(v, str) and v[:1] in ("[", "{"):
        try:
            return json.loads(v)
        except ValueError:
            return v
    return v


def blocks_text(v: Any) -> str | None:
    """The text of a list of Strands content blocks (``[{"text": ...}, {"json": ...}]``),
    one line each; None when ``v`` is no such list."""
    v = _decoded(v)
    if not isinstance(v, list) or not v or not all(isinstance(b, dict) and len(b) == 1 for b in v):
        return None
    out = []
    for b in v:
        if isinstance(b.get("text"), str):
            out.append(b["text"])
        elif "json" in b:
            out.append(json.dumps(b["json"]))
        else:
            return None
    return "\n".join(out)


def _parts(content: Any) -> list[dict[str, Any]]:
    """A message's content as GenAI parts: Strands' content blocks, else one text part."""
    blocks = _decoded(content)
    if not isinstance(blocks, list):
        return [] if content is None or content == "" else [{"type": "text", "content": str(content)}]
    parts: list[dict[str, Any]] = []
    for b in blocks:
        if not isinstance(b, dict):
            continue
        if isinstance(b.get("text"), str):
            parts.append({"type": "text", "content": b["text"]})
        elif isinstance(b.get("toolUse"), dict):
            u = b["toolUse"]
            parts.append({"type": "tool_call", "id": str(u.get("toolUseId") or ""), "name": str(u.get("name") or "unknown"),
                          "arguments": u.get("input")})
        elif isinstance(b.get("toolResult"), dict):
            r = b["toolResult"]
            text = blocks_text(r.get("content"))
            parts.append({"type": "tool_call_response", "id": str(r.get("toolUseId") or ""),
                          "response": text if text is not None else r.get("content"),
                          "status": str(r.get("status") or "")})
    return parts


def _is_tool(name: str, operation: Any) -> bool:
    if operation is not None:
        return operation == EXECUTE_TOOL
    return name == EXECUTE_TOOL or name.startswith(EXECUTE_TOOL + " ")


def content_attributes(name: str, operation: Any, events: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The content attributes the events (``(event name, attributes)``, in order) of the span
    named ``name`` with ``gen_ai.operation.name`` ``operation`` carry."""
    tool = _is_tool(name, operation)
    lists: dict[str, list[Any]] = {}
    out: dict[str, Any] = {}
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    reasons: list[str] = []
    for event, attrs in events:
        if event == DETAILS:
            for key in LISTS:
                if key in attrs:
                    v = _decoded(attrs[key])
                    lists.setdefault(key, []).extend(v if isinstance(v, list) else [v])
            if "gen_ai.response.finish_reasons" in attrs:
                out.setdefault("gen_ai.response.finish_reasons", attrs["gen_ai.response.finish_reasons"])
        elif event in LEGACY:
            key = LEGACY[event]
            if key in attrs:
                out.setdefault(key, attrs[key])
        elif tool and event == "gen_ai.tool.message":
            # a tool span's own: the arguments it was called with
            if "content" in attrs:
                out.setdefault("gen_ai.tool.call.arguments", attrs["content"])
            if attrs.get("id"):
                out.setdefault("gen_ai.tool.call.id", attrs["id"])
        elif tool and event == CHOICE:
            if "message" in attrs:
                text = blocks_text(attrs["message"])
                out.setdefault("gen_ai.tool.call.result", text if text is not None else attrs["message"])
        elif event in MESSAGE_EVENTS:
            parts = _parts(attrs.get("content"))
            if isinstance(attrs.get("tool_calls"), list):
                parts += _openai_calls(attrs["tool_calls"])
            inputs.append({"role": MESSAGE_EVENTS[event], "parts": parts})
        elif event == CHOICE:
            message = {"role": "assistant", "parts": _parts(attrs.get("message"))}
            if attrs.get("finish_reason"):
                message["finish_reason"] = str(attrs["finish_reason"])
                reasons.append(str(attrs["finish_reason"]))
            outputs.append(message)
    if tool:
        _tool_from_messages(lists, out)
    if inputs:
        lists.setdefault("gen_ai.input.messages", []).extend(inputs)
    if outputs:
        lists.setdefault("gen_ai.output.messages", []).extend(outputs)
    if reasons:
        out.setdefault("gen_ai.response.finish_reasons", reasons)
    for key, items in lists.items():
        out.setdefault(key, items)
    return out


def _openai_calls(calls: list[Any]) -> list[dict[str, Any]]:
    out = []
    for c in calls:
        if isinstance(c, dict):
            fn = c.get("function") if isinstance(c.get("function"), dict) else {}
            out.append({"type": "tool_call", "id": str(c.get("id") or ""), "name": str(fn.get("name") or "unknown"),
                        "arguments": fn.get("arguments")})
    return out


def _tool_from_messages(lists: dict[str, list[Any]], out: dict[str, Any]) -> None:
    """A tool span's arguments and result from the ``tool_call`` and ``tool_call_response``
    parts of its details events (Strands' latest conventions), where no attribute has them."""
    for key, part_type, field, attr in (("gen_ai.input.messages", "tool_call", "arguments", "gen_ai.tool.call.arguments"),
                                        ("gen_ai.output.messages", "tool_call_response", "response",
                                         "gen_ai.tool.call.result")):
        for m in lists.pop(key, ()):
            for p in (m.get("parts") if isinstance(m, dict) and isinstance(m.get("parts"), list) else ()):
                if isinstance(p, dict) and p.get("type") == part_type and field in p:
                    v = p[field]
                    text = blocks_text(v) if attr.endswith("result") else None
                    out.setdefault(attr, text if text is not None else v if isinstance(v, str) else json.dumps(v))
