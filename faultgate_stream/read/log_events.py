"""GenAI content carried in log records -> content records, joined to their spans later.

With content capture set to ``event_only`` (opentelemetry-util-genai's
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``), a span carries no messages; the
content goes out through the Logs API, on records correlated with the span by trace and
span id. Two shapes are read:

- ``gen_ai.client.inference.operation.details``: one record per model call whose
  attributes hold ``gen_ai.input.messages`` / ``gen_ai.output.messages`` /
  ``gen_ai.system_instructions`` as structured values (the span shape's JSON, decoded)
  and ``gen_ai.response.finish_reasons``;
- the older per-message events (``gen_ai.user.message``, ``gen_ai.assistant.message``,
  ``gen_ai.tool.message``, ``gen_ai.choice``; ``gen_ai.system.message`` carries nothing a
  check reads) with the message in the body: ``content``, ``tool_calls`` as
  ``{id, function: {name, arguments}}``, a tool message's ``id``, a choice's
  ``finish_reason`` and ``message``.

A body of another shape than these (a number or a list where an object is expected) is an
``InputError`` naming where: the record is rejected, never answered as if it were our bug.

The event name is the record's ``event_name`` field, else its ``event.name`` attribute.
Each becomes a ``SpanRecord`` of the span it describes, with only the content fields set
(``CONTENT``: what ``assemble`` merges into the span). Records of other events, or
without a span to join, are not content: ``read`` returns how many it passed over.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.records import (
    MISSING_FINISH, MISSING_INPUT, MISSING_OUTPUT, MISSING_TOOL_ARGUMENTS, MISSING_TOOL_RESULT, SpanRecord,
)
from faultgate_stream import _native
from faultgate_stream.read.conventions import build_span

DETAILS = "gen_ai.client.inference.operation.details"
INPUT_EVENTS = {"gen_ai.user.message": "user", "gen_ai.assistant.message": "assistant",
                "gen_ai.tool.message": "tool"}
CHOICE = "gen_ai.choice"
IGNORED = frozenset({"gen_ai.system.message"})
# The name a content record carries, so it reads as what it is wherever it is printed.
CONTENT = "gen_ai.content"


def event_name(name: str, attrs: dict[str, Any]) -> str:
    return name or str(attrs.get("event.name") or "")


def _kind(v: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", bytes: "bytes"}.get(type(v), type(v).__name__)


def _message(role: str, body: Any, where: str = "body") -> dict[str, Any]:
    """A per-message event's body as a GenAI message with parts."""
    body = body if isinstance(body, dict) else {"content": body}
    parts: list[dict[str, Any]] = []
    if role == "tool":
        parts.append({"type": "tool_call_response", "id": str(body.get("id") or ""), "response": body.get("content")})
    elif body.get("content") is not None:
        parts.append({"type": "text", "content": body["content"]})
    calls = body.get("tool_calls") or ()
    if not isinstance(calls, (list, tuple)):
        raise InputError(f"{where}.tool_calls: expected a list of tool calls, not {_kind(calls)}")
    for n, c in enumerate(calls):
        if not isinstance(c, dict):
            raise InputError(f"{where}.tool_calls[{n}]: expected an object, not {_kind(c)}")
        fn = c.get("function") or {}
        if not isinstance(fn, dict):
            raise InputError(f"{where}.tool_calls[{n}].function: expected an object, not {_kind(fn)}")
        parts.append({"type": "tool_call", "id": str(c.get("id") or ""), "name": str(fn.get("name") or "unknown"),
                      "arguments": fn.get("arguments")})
    return {"role": role, "parts": parts}


def content_attributes(name: str, attrs: dict[str, Any], body: Any) -> dict[str, Any] | None:
    """The span-shaped content attributes an event carries; None when it carries none.
    Raises ``InputError`` when a GenAI event's body is of another shape than its own."""
    if name == DETAILS:
        keep = {k: attrs[k] for k in ("gen_ai.input.messages", "gen_ai.output.messages",
                                      "gen_ai.system_instructions", "gen_ai.response.finish_reasons") if k in attrs}
        return keep or None
    if name in INPUT_EVENTS:
        return {"gen_ai.input.messages": [_message(INPUT_EVENTS[name], body)]}
    if name == CHOICE:
        if body is None:
            body = {}
        if not isinstance(body, dict):
            raise InputError(f"the {CHOICE} event's body: expected an object, not {_kind(body)}")
        out: dict[str, Any] = {"gen_ai.output.messages": [_message("assistant", body.get("message") or {},
                                                                   "body.message")]}
        if body.get("finish_reason"):
            out["gen_ai.response.finish_reasons"] = [str(body["finish_reason"])]
        return out
    return None


def content_record(trace_id: str, span_id: str, time_ns: int, attrs: dict[str, Any]) -> SpanRecord:
    """The content of one event as a record of its span (see ``assemble.content.merge``)."""
    rec = build_span(trace_id, span_id, None, CONTENT, time_ns, time_ns, 0, "", attrs)
    # the size the assembler's memory bound counts: structured values are not strings
    size = _native.RECORD_BYTES + len(rec.prompt) + len(rec.answer) + sum(len(c.arguments) + 40 for c in rec.calls) \
        + sum(len(r) + 20 for _, r in rec.responses)
    # ``missing`` says what this record does not carry, as on a span: merged into its span,
    # a flag stays only when neither the span nor any of its records carried that content
    missing = ((0 if "gen_ai.input.messages" in attrs else MISSING_INPUT)
               | (0 if "gen_ai.output.messages" in attrs else MISSING_OUTPUT)
               | (0 if "gen_ai.response.finish_reasons" in attrs else MISSING_FINISH)
               | MISSING_TOOL_ARGUMENTS | MISSING_TOOL_RESULT)  # a tool's own are read from messages by call id
    return rec._replace(operation=None, attrs={}, missing=missing, size=size)
