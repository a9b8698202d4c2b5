"""read/payload.py as it stood before native/core/src/read/payload.rs replaced it, kept only as
the oracle of tests/read/test_conventions_parity.py (the compiled functions must give what
these give). Not to be imported by the package.

Turning message and tool payloads into the strings checks compare.

The rules match faultgate 0.4.1's, so a step reads to the same text in both tools: JSON
held in a string is decoded once and re-rendered, a list of ``{"text": ...}`` parts is
joined, a ``{"type": "text"}`` part is its text.
"""
from __future__ import annotations

import base64
import json
from typing import Any


from faultgate_stream.read.payload import loads  # noqa: E402  (unchanged by the move)


def dumps(v: Any) -> str:
    """``json.dumps(v, ensure_ascii=False)`` for any value a reader may hold: bytes (an
    OTLP ``bytesValue``) as OTLP/JSON writes them, base64; a structure nested too deep to
    write as a marker instead of a RecursionError (issue 9, defect 2)."""
    try:
        return json.dumps(v, ensure_ascii=False, default=_plain)
    except RecursionError:
        return "[unreadable: nested too deep]"


def _plain(v: Any) -> str:
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode("ascii")
    return str(v)


def parts(m: dict[str, Any]) -> list[Any]:
    """A message's ``parts``, when they are a list (anything else has none to read)."""
    p = m.get("parts")
    return p if isinstance(p, list) else []


def load_json(raw: Any) -> Any:
    """``raw`` decoded when it is a string holding JSON, else ``raw`` itself."""
    if isinstance(raw, str):
        try:
            return loads(raw)
        except ValueError:
            return raw
    return raw


def render(val: Any) -> str:
    """A tool argument or result as a step's text."""
    if val is None:
        return ""
    if isinstance(val, str):
        s = val.strip()
        if (s[:1], s[-1:]) in (("[", "]"), ("{", "}")):
            try:
                return render(loads(s))
            except ValueError:
                return val
        return val
    if isinstance(val, list):
        if val and all(isinstance(x, dict) and "text" in x for x in val):
            return " ".join(str(x["text"]) for x in val)
        return dumps(val)
    if isinstance(val, dict):
        if val.get("type") == "text" and "text" in val:
            return str(val["text"])
        return dumps(val)
    return str(val)


def messages(raw: Any) -> list[dict[str, Any]]:
    """The message objects of a ``gen_ai.*.messages`` value (a JSON string or a list)."""
    raw = load_json(raw)
    return [m for m in raw if isinstance(m, dict)] if isinstance(raw, list) else []


def role_text(raw: Any, role: str) -> str:
    """The text that messages of ``role`` carry. A value that is not JSON is taken as the
    text itself, since some instrumentations put a bare string where messages belong."""
    if isinstance(raw, str):
        try:
            raw = loads(raw)
        except ValueError:
            return raw
    return _role_text(raw, role)


def messages_and_text(raw: Any, role: str) -> tuple[list[dict[str, Any]], str]:
    """``(messages(raw), role_text(raw, role))`` with one decode of ``raw``, not two."""
    if raw is None:
        return [], ""
    if isinstance(raw, str):
        try:
            raw = loads(raw)
        except ValueError:
            return [], raw
    if not isinstance(raw, list):
        return [], ""
    return [m for m in raw if isinstance(m, dict)], _role_text(raw, role)


def _role_text(raw: Any, role: str) -> str:
    if not isinstance(raw, list):
        return ""
    out: list[str] = []
    for m in raw:
        if not isinstance(m, dict) or m.get("role") != role:
            continue
        for p in parts(m):
            if isinstance(p, dict) and p.get("type") == "text":
                out.append(str(p.get("content", p.get("text", ""))))
        if "content" in m and not m.get("parts"):
            out.append(str(m["content"]))
    return "\n".join(out)


def plain_text(v: Any, role: str = "user") -> str:
    """Plain text from a prompt or answer payload of a vendor export: a string, a
    ``{input|output|...: str}`` wrapper, or chat messages (the last of ``role``)."""
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        for k in ("input", "output", "query", "question", "prompt", "answer", "content", "text", "result"):
            if isinstance(v.get(k), str):
                return v[k]
        if isinstance(v.get("messages"), list):
            return plain_text(v["messages"], role)
        if len(v) == 1:
            return plain_text(next(iter(v.values())), role)
    if isinstance(v, list) and v and all(isinstance(m, dict) for m in v):
        # LangChain's serialised messages (a graph state's ``messages``) read as chat messages
        v = [lc_message(m) or m for m in v]
        texts = [m["content"] for m in v if isinstance(m.get("content"), str)]
        roles = ("user", "human") if role == "user" else ("assistant", "ai")
        mine = [m["content"] for m in v if m.get("role") in roles and isinstance(m.get("content"), str)]
        return (mine or texts or [""])[-1]
    return dumps(v)


def agent_text(raw: Any, role: str) -> str:
    """An agent span's prompt or answer from its ``input.value`` / ``output.value``: JSON held
    in the string is read as a payload (a graph state's messages, a wrapper), and a bare
    ``None`` / ``null`` (an agent that returned nothing) is no text."""
    if isinstance(raw, str):
        s = raw.strip()
        if s in ("None", "null"):
            return ""
        if (s[:1], s[-1:]) in (("[", "]"), ("{", "}")):
            v = load_json(s)
            if isinstance(v, dict) and isinstance(v.get("raw"), str) and "tasks_output" in v:
                return v["raw"]  # CrewAI's CrewOutput: the crew's answer is its raw text
            if isinstance(v, dict) and isinstance(v.get("task"), str):
                return v["task"]  # smolagents' run(task=...)
            if isinstance(v, dict) and isinstance(v.get("messages"), list):
                # LangGraph's input: messages as ("user", "text") pairs beside dicts
                v = dict(v, messages=[{"role": m[0], "content": m[1]} if _pair(m) else m for m in v["messages"]])
            if not isinstance(v, str):
                return plain_text(v, role)
    return plain_text(raw, role)


def _pair(m: Any) -> bool:
    return isinstance(m, list) and len(m) == 2 and all(isinstance(x, str) for x in m)


def tool_payload(v: Any) -> str:
    """Tool arguments or result from a vendor export: strings as they are, structures as
    JSON, a lone ``{"input": x}`` / ``{"output": x}`` wrapper unwrapped."""
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, dict) and len(v) == 1 and next(iter(v)) in ("input", "output"):
        return tool_payload(next(iter(v.values())))
    return dumps(v)


# ---------------------------------------------------------------- framework serialisations
# LangChain writes a message either as ``{"type": "tool", "data": {"content": ...}}``
# (``messages_to_dict``) or as ``{"lc": 1, "type": "constructor", "id": [..., "ToolMessage"],
# "kwargs": {"content": ...}}`` (its ``dumpd``); instrumentations put either where a tool
# result or an answer belongs, and callback handlers wrap a tool's input as
# ``{"input_str": "{'city': 'Paris'}", "tags": ..., "metadata": ...}``.
LC_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system",
            "HumanMessage": "user", "AIMessage": "assistant", "ToolMessage": "tool", "SystemMessage": "system",
            "AIMessageChunk": "assistant"}
_REPR_LIMIT = 100_000  # a Python-literal payload longer than this is left as text


def lc_message(v: Any) -> dict[str, Any] | None:
    """``{"role", "content", "status"}`` of a serialised LangChain message, else None."""
    if not isinstance(v, dict):
        return None
    if v.get("lc") == 1 and v.get("type") == "constructor" and isinstance(v.get("kwargs"), dict):
        ident = v.get("id")
        kind = str(ident[-1]) if isinstance(ident, list) and ident else ""
        body = v["kwargs"]
        role = LC_ROLES.get(kind) or LC_ROLES.get(str(body.get("type", "")))
    elif isinstance(v.get("data"), dict) and str(v.get("type", "")) in LC_ROLES:
        body = v["data"]
        role = LC_ROLES[str(v["type"])]
    else:
        return None
    if role is None or "content" not in body:
        return None
    return {"role": role, "content": _lc_content(body["content"]), "status": str(body.get("status") or "")}


def _lc_content(c: Any) -> str:
    if isinstance(c, str):
        return c
    if isinstance(c, list):  # content blocks
        return " ".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in c).strip()
    return render(c)


def lc_tool_result(v: Any) -> str | None:
    """A tool result that is a serialised ``ToolMessage`` (alone, under ``output``, or as the
    one message of a node's ``{"messages": [...]}``): its content, marked as an error when
    the message says so. None when ``v`` is not one."""
    if isinstance(v, dict) and "output" in v and set(v) <= {"output", "kwargs"}:
        v = v["output"]
    if isinstance(v, dict) and isinstance(v.get("messages"), list) and len(v["messages"]) == 1:
        v = v["messages"][0]
    m = lc_message(v)
    if m is None or m["role"] != "tool":
        return None
    if m["status"] == "error" and not m["content"].startswith("Error"):
        return "Error: " + m["content"]
    return m["content"]


def python_literal(text: str) -> Any:
    """A Python repr of a dict or list (what ``str()`` of a payload writes) as a value, or
    None when ``text`` is not one. Only literals: ``ast.literal_eval`` runs no code."""
    import ast

    s = text.strip()
    if len(s) > _REPR_LIMIT or (s[:1], s[-1:]) not in (("{", "}"), ("[", "]")):
        return None
    try:
        return ast.literal_eval(s)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def call_arguments(v: Any) -> str | None:
    """A tool's own arguments out of the payload a framework's callback recorded, or None
    when ``v`` is not such a payload: ``{"args": [], "kwargs": {...}}`` (smolagents, the
    traceloop decorators) and ``{"input_str": "{'k': 'v'}", "tags", "metadata"}``
    (LangChain's ``on_tool_start``)."""
    if not isinstance(v, dict):
        return None
    if isinstance(v.get("kwargs"), dict) and not v.get("args") and "args" in v:
        return json.dumps(v["kwargs"], ensure_ascii=False)
    if isinstance(v.get("input_str"), str) and set(v) - {"input_str"} <= {"tags", "metadata", "inputs", "kwargs"}:
        raw = v["input_str"]
        lit = python_literal(raw)
        if isinstance(lit, dict):
            return json.dumps(lit, ensure_ascii=False, default=str)
        return raw
    return None


def is_parameter_schema(v: Any) -> bool:
    """A JSON schema of a tool's parameters (``{"type": "object", "properties": ...}``, maybe
    under ``parameters``), not the arguments of a call."""
    if isinstance(v, dict) and isinstance(v.get("parameters"), dict):
        v = v["parameters"]
    return isinstance(v, dict) and v.get("type") == "object" and isinstance(v.get("properties"), dict)


def repr_message(text: str) -> list[dict[str, Any]] | None:
    """The parts of an assistant message written as a Python repr in a text part
    (``"{'content': None, 'role': 'assistant', 'tool_calls': [...]}"``, as
    opentelemetry-instrumentation-openai-agents-v2 0.1 writes it): its text, if any, and its
    tool calls. None when ``text`` is not such a repr."""
    if not text.startswith("{'") or "'role': 'assistant'" not in text:
        return None
    v = python_literal(text)
    if not isinstance(v, dict) or v.get("role") != "assistant":
        return None
    parts: list[dict[str, Any]] = []
    if isinstance(v.get("content"), str) and v["content"]:
        parts.append({"type": "text", "content": v["content"]})
    for c in v.get("tool_calls") or ():
        fn = c.get("function") if isinstance(c, dict) else None
        if isinstance(fn, dict):
            parts.append({"type": "tool_call", "id": str(c.get("id", "")), "name": str(fn.get("name", "unknown")),
                          "arguments": fn.get("arguments", "")})
    return parts


def unrepr_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with each text part that is an assistant message's repr replaced by
    what that message holds."""
    out = []
    for m in messages:
        parts = m.get("parts")
        if isinstance(parts, list):
            new: list[Any] = []
            for p in parts:
                text = p.get("content") if isinstance(p, dict) and p.get("type") == "text" else None
                inner = repr_message(text) if isinstance(text, str) else None
                new.extend(inner if inner is not None else [p])
            m = dict(m, parts=new)
        out.append(m)
    return out


def role_text_of(messages: list[dict[str, Any]], role: str) -> str:
    return _role_text(messages, role)
