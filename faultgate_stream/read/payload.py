"""Turning message and tool payloads into the strings checks compare.

The rules match faultgate 0.4.1's, so a step reads to the same text in both tools: JSON
held in a string is decoded once and re-rendered, a list of ``{"text": ...}`` parts is
joined, a ``{"type": "text"}`` part is its text.
"""
from __future__ import annotations

import base64
import json
from typing import Any

import msgspec

# A dependency, not an optional speed-up with an import fallback: one decoder everywhere
# keeps every run of the tool on the same code. Measured here: a 730 KB OTLP/JSON file of
# 673 spans took json.loads 2.6 ms and msgspec 1.5 ms; a 150-byte tool result 2.2 us and
# 0.35 us. orjson was as fast but turns integers beyond 64 bits into floats.
_decode = msgspec.json.Decoder().decode


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``, faster.

    Where msgspec decodes a text it returns what the standard library would, type for type
    and integers of any size included (compared with json.loads on 200,000 generated
    documents; tests/read/test_fast_paths.py goes on comparing). What it refuses goes to
    json.loads, which accepts it (NaN, Infinity, lone surrogates, a byte order mark,
    UTF-16) or raises its own error, so values and error messages stay the standard
    library's. The one place they part: a document nested some 990 levels deep, where
    json.loads runs out of stack a few levels before msgspec.
    """
    try:
        return _decode(text)
    except (ValueError, RecursionError):
        pass
    try:
        return json.loads(text)
    except RecursionError:
        # JSON nested thousands deep is not a payload anyone reads: callers take it as
        # text, as they take any other text that is not JSON (issue 9, defect 2)
        raise ValueError("JSON nested too deep to read") from None


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
        texts = [m["content"] for m in v if isinstance(m.get("content"), str)]
        roles = ("user", "human") if role == "user" else ("assistant", "ai")
        mine = [m["content"] for m in v if m.get("role") in roles and isinstance(m.get("content"), str)]
        return (mine or texts or [""])[-1]
    return dumps(v)


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
