"""What every export reader builds its spans from, so each mapping is written once.

An export rarely has a span that says "this is the agent run": a reader synthesizes one
(``agent_root``) so the run's steps hang off a single ``invoke_agent`` root that carries
the prompt, answer, scenario and user. Tool calls become ``execute_tool`` spans
(``tool_span``) whose failure both the step's ``ok`` (status 2) and any check reading the
result text (``Error: ...``) can see. Times become epoch nanoseconds (``to_ns``).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation
from typing import Any

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.records import EXECUTE_TOOL, INVOKE_AGENT, SpanRecord
from faultgate_stream.read import payload
from faultgate_stream.read.conventions import USER_KEYS, build_span

ERROR_PREFIX = "Error: "
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# An epoch number's unit, told apart by magnitude: above 1e17 it can only be ns, above
# 1e14 µs, above 1e11 ms (1e11 s would be the year 5138); anything smaller is seconds.
_UNIT_SCALES = ((Decimal("1e17"), 1), (Decimal("1e14"), 1_000), (Decimal("1e11"), 1_000_000))


# ---------------------------------------------------------------- records

def records(doc: Any, *keys: str) -> list[Any]:
    """The record list of an export: the document when it is a list, else the value of the
    first of ``keys`` that holds a list (an API page such as ``{"data": [...]}``)."""
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict):
        for k in keys:
            if isinstance(doc.get(k), list):
                return doc[k]
    return []


def first_object(items: Iterable[Any]) -> dict[str, Any] | None:
    """The first record that is an object: detection looks at it, as the record type."""
    return next((x for x in items if isinstance(x, dict)), None)


def objects(items: list[Any], where: str) -> list[dict[str, Any]]:
    """``items`` when every one is an object. Raises ``InputError`` naming the first that is not."""
    for i, x in enumerate(items):
        if not isinstance(x, dict):
            raise InputError(f"{where}[{i}]: expected an object, got {type(x).__name__}")
    return items


def get(d: dict[str, Any], *keys: str, default: Any = None) -> Any:
    """The first of ``keys`` present and not null: one lookup reads camelCase and snake_case."""
    for k in keys:
        if d.get(k) is not None:
            return d[k]
    return default


def required(d: dict[str, Any], *keys: str, where: str) -> Any:
    """Like ``get``, but a record without any of ``keys`` is an ``InputError``."""
    v = get(d, *keys)
    if v is None or v == "":
        raise InputError(f"{where}: no {' or '.join(keys)}")
    return v


def derived_trace_id(doc: Any) -> str:
    """A trace id for an export that carries none: a hash of its content, so reading the same
    file twice names the same trace."""
    canonical = json.dumps(doc, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


# ---------------------------------------------------------------- time

def _decimal(v: Any) -> Decimal | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, float):
        v = repr(v)  # the shortest decimal that round-trips: 1790848800.1 stays exact
    if isinstance(v, (int, str)):
        try:
            d = Decimal(v)
        except InvalidOperation:
            return None
        return d if d.is_finite() else None
    return None


def to_ns(t: Any) -> int:
    """Epoch nanoseconds of an ISO-8601 string (no zone means UTC) or of an epoch number, or
    numeric string, in s, ms, µs or ns. 0 when absent. Raises ``ValueError`` otherwise."""
    if t is None or t == "":
        return 0
    n = _decimal(t)
    if n is not None:
        for limit, scale in _UNIT_SCALES:
            if abs(n) > limit:
                return int(n * scale)
        return int(n * 1_000_000_000)
    if not isinstance(t, str):
        raise ValueError(f"{t!r} is not a timestamp")
    d = datetime.fromisoformat(t.strip())
    if d.tzinfo is None:
        d = d.replace(tzinfo=timezone.utc)
    # Integer arithmetic on the timedelta: a float timestamp would lose the microseconds.
    delta = d - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def seconds_ns(v: Any) -> int | None:
    """A duration in seconds as nanoseconds; None when ``v`` is not a number."""
    n = _decimal(v) if isinstance(v, (int, float)) else None
    return int(n * 1_000_000_000) if n is not None else None


def strictly_increasing(times: list[int]) -> list[int]:
    """``times`` (already in the order the export says things happened) nudged forward by a
    nanosecond where they tie or go back, so a run's start-time order is that order."""
    out: list[int] = []
    for t in times:
        out.append(t if not out or t > out[-1] else out[-1] + 1)
    return out


# ---------------------------------------------------------------- spans

def error_text(v: Any) -> str:
    """An export's error field as one line of text ("" when there is none)."""
    if v is None or v is False or v == "":
        return ""
    if isinstance(v, dict):
        for k in ("message", "description", "error"):
            if isinstance(v.get(k), str) and v[k]:
                return v[k]
        return json.dumps(v, ensure_ascii=False)
    return str(v)


def error_result(result: str, error: str) -> str:
    """A failed call's result, reading as an error: ``Error: <error> <result>``, unless the
    result already starts that way."""
    if result.startswith(ERROR_PREFIX):
        return result
    return ERROR_PREFIX + (" ".join(p for p in (error, result) if p) or "failed")


def message_list(role: str, text: str) -> str:
    """One-message GenAI message list, as JSON: how a synthesized span carries its text."""
    return json.dumps([{"role": role, "content": text}], ensure_ascii=False)


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str):
        # Some APIs serialise decimals (costs, mostly) as strings.
        n = _decimal(v.strip())
        return float(n) if n is not None else None
    return None


def measures(*, input_tokens: Any = None, output_tokens: Any = None, finish_reason: Any = None,
             cost: Any = None) -> dict[str, Any]:
    """The usage attributes of a span: the values that are there, under their GenAI names."""
    a: dict[str, Any] = {}
    for key, v in (("gen_ai.usage.input_tokens", input_tokens), ("gen_ai.usage.output_tokens", output_tokens)):
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            a[key] = int(v)
    if finish_reason:
        a["gen_ai.response.finish_reasons"] = [str(finish_reason)]
    c = _number(cost)
    if c is not None:
        a["faultgate.cost_usd"] = float(c)
    return a


def payload_text(v: Any, role: str) -> str:
    """The text of a prompt or answer payload (see ``payload.plain_text``); "" for an empty one."""
    if v is None or v == "" or v == {} or v == []:
        return ""
    return payload.plain_text(v, role)


def agent_root(trace_id: str, span_id: str, name: str, start_ns: int, end_ns: int, *, prompt: Any = None,
               answer: Any = None, metadata: Any = None, user: Any = None, error: str = "",
               attrs: dict[str, Any] | None = None) -> SpanRecord:
    """The run's ``invoke_agent`` root. ``prompt`` / ``answer`` are export payloads (text, a
    ``{"input": ...}`` wrapper, chat messages); ``metadata.scenario`` becomes the scenario and
    ``user`` (else a user key of ``metadata``) the end user."""
    a: dict[str, Any] = {"gen_ai.operation.name": INVOKE_AGENT, "gen_ai.agent.name": name}
    prompt_text, answer_text = payload_text(prompt, "user"), payload_text(answer, "assistant")
    if prompt_text:
        a["gen_ai.input.messages"] = message_list("user", prompt_text)
    if answer_text:
        a["gen_ai.output.messages"] = message_list("assistant", answer_text)
    md = metadata if isinstance(metadata, dict) else {}
    if md.get("scenario"):
        a["faultgate.scenario"] = str(md["scenario"])
    user = user or next((md[k] for k in USER_KEYS if md.get(k)), None)
    if user:
        a["enduser.id"] = str(user)
    a.update(attrs or {})
    return build_span(trace_id, span_id, None, name, start_ns, end_ns, 2 if error else 0, error, a)


def tool_span(trace_id: str, span_id: str, parent_id: str | None, name: str, start_ns: int, end_ns: int,
              arguments: Any, result: Any, *, ok: bool = True, error: str = "", call_id: str = "",
              attrs: dict[str, Any] | None = None) -> SpanRecord:
    """An ``execute_tool`` span. The call failed when ``ok`` is false or there is an ``error``:
    then the span has status 2 and its result reads as an error (see ``error_result``)."""
    res = payload.tool_payload(result)
    failed = not ok or bool(error)
    if failed:
        res = error_result(res, error)
    a: dict[str, Any] = {"gen_ai.operation.name": EXECUTE_TOOL, "gen_ai.tool.name": name,
                         "gen_ai.tool.call.arguments": payload.tool_payload(arguments),
                         "gen_ai.tool.call.result": res}
    if call_id:
        a["gen_ai.tool.call.id"] = call_id
    a.update(attrs or {})
    return build_span(trace_id, span_id, parent_id, name, start_ns, end_ns, 2 if failed else 0,
                      error or ("failed" if failed else ""), a)


def span(trace_id: str, span_id: str, parent_id: str | None, name: str, start_ns: int, end_ns: int,
         operation: str, *, error: str = "", attrs: dict[str, Any] | None = None) -> SpanRecord:
    """Any other span (a model call, a chain step): its operation, its attributes, its status."""
    a: dict[str, Any] = {"gen_ai.operation.name": operation, **(attrs or {})}
    return build_span(trace_id, span_id, parent_id, name, start_ns, end_ns, 2 if error else 0, error, a)
