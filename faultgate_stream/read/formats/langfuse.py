"""Langfuse exports -> spans.

Two shapes: trace objects with their ``observations`` (``GET /api/public/traces/{id}``, a
page of them under ``data``, or a list), and bare observation rows grouped by ``traceId``
(``GET /api/public/observations`` pages in camelCase, blob exports in snake_case).

Each trace becomes an ``invoke_agent`` root carrying its input, output, ``metadata.scenario``
and user (for rows, which have no trace object, the first and last generation's). ``TOOL``
observations are the steps, ``GENERATION`` observations chat spans, any other type a span of
that name; an observation at level ``ERROR`` failed. Trace ids are Langfuse's own, so a
report names the trace a user can open.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.read.formats.shared import (
    agent_root, first_object, get, measures, message_list, objects, payload_text, records,
    required, seconds_ns, span, to_ns, tool_span,
)

# The field names this format's records carry: how close an unrecognised file came to it.
SIGNATURE = frozenset({"observations", "traceId", "parentObservationId", "startTime", "endTime", "type", "input", "output", "metadata", "userId", "latency"})
NEEDS = (("observations", "traceId", "trace_id"), ("observations", "type"))

TYPES = frozenset({"SPAN", "GENERATION", "EVENT", "TOOL", "AGENT", "CHAIN", "RETRIEVER", "EVALUATOR",
                   "EMBEDDING", "GUARDRAIL"})


def _is_trace(x: dict[str, Any]) -> bool:
    return isinstance(x.get("observations"), list)


def _is_row(x: dict[str, Any]) -> bool:
    # run_type is LangSmith's: a LangSmith run with a trace_id and a "type" is not a row.
    return (bool(get(x, "traceId", "trace_id")) and str(x.get("type", "")).upper() in TYPES
            and "run_type" not in x)


def _items(doc: Any) -> list[Any]:
    if isinstance(doc, dict) and _is_trace(doc):
        return [doc]
    return records(doc, "data")


def detect(doc: Any) -> bool:
    first = first_object(_items(doc))
    return first is not None and (_is_trace(first) or _is_row(first))


def read(doc: Any) -> list[SpanRecord]:
    items = objects(_items(doc), "langfuse")
    if not items:
        raise InputError("no traces or observations")
    if _is_trace(items[0]):
        out: list[SpanRecord] = []
        for i, tr in enumerate(items):
            if not _is_trace(tr):
                raise InputError(f"langfuse[{i}]: a trace without an observations list")
            out += _trace(str(required(tr, "id", where=f"langfuse[{i}]")), tr, tr["observations"])
        return out
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for i, o in enumerate(items):
        by_trace.setdefault(str(required(o, "traceId", "trace_id", where=f"langfuse[{i}]")), []).append(o)
    return [s for tid, obs in by_trace.items() for s in _trace(tid, {}, obs)]


def _start(o: dict[str, Any]) -> int:
    return to_ns(get(o, "startTime", "start_time"))


def _end(o: dict[str, Any]) -> int:
    return to_ns(get(o, "endTime", "end_time"))


def _type(o: dict[str, Any]) -> str:
    return str(o.get("type") or "SPAN").upper()


def _trace(tid: str, tr: dict[str, Any], obs: list[Any]) -> list[SpanRecord]:
    obs = objects(obs, f"trace {tid} observations")
    root_id = f"{tid}:root"
    start = to_ns(tr.get("timestamp")) or min((t for t in map(_start, obs) if t), default=0)
    # A trace's latency is in seconds; without it the run ends with its last observation.
    latency = seconds_ns(tr.get("latency"))
    end = start + latency if latency is not None else max(map(_end, obs), default=0)
    gens = sorted((o for o in obs if _type(o) == "GENERATION"), key=_start)
    prompt = tr.get("input") if tr.get("input") is not None else (gens[0].get("input") if gens else None)
    answer = tr.get("output") if tr.get("output") is not None else (gens[-1].get("output") if gens else None)
    root = agent_root(tid, root_id, str(tr.get("name") or "agent"), start, end, prompt=prompt, answer=answer,
                      metadata=tr.get("metadata"), user=get(tr, "userId", "user_id"))
    return [root, *(_observation(tid, root_id, o, f"trace {tid} observations[{i}]") for i, o in enumerate(obs))]


def _observation(tid: str, root_id: str, o: dict[str, Any], where: str) -> SpanRecord:
    typ = _type(o)
    sid = str(required(o, "id", where=where))
    parent = str(get(o, "parentObservationId", "parent_observation_id") or root_id)
    name = str(o.get("name") or typ.lower())
    error = ""
    if str(o.get("level", "")).upper() == "ERROR":
        error = str(get(o, "statusMessage", "status_message") or "error")
    usage = get(o, "usageDetails", "usage_details", "usage", default={})
    usage = usage if isinstance(usage, dict) else {}
    cost = get(o, "costDetails", "cost_details", default={})
    md = o.get("metadata") if isinstance(o.get("metadata"), dict) else {}
    attrs = measures(input_tokens=get(usage, "input", "promptTokens", "input_tokens"),
                     output_tokens=get(usage, "output", "completionTokens", "output_tokens"),
                     finish_reason=md.get("finish_reason"),
                     cost=cost.get("total") if isinstance(cost, dict) else None)
    if typ == "TOOL":
        return tool_span(tid, sid, parent, name, _start(o), _end(o), o.get("input"), o.get("output"),
                         error=error, attrs=attrs)
    if typ == "GENERATION":
        for key, role, v in (("gen_ai.input.messages", "user", o.get("input")),
                             ("gen_ai.output.messages", "assistant", o.get("output"))):
            text = payload_text(v, role)
            if text:
                attrs[key] = message_list(role, text)
    return span(tid, sid, parent, name, _start(o), _end(o), "chat" if typ == "GENERATION" else typ.lower(),
                error=error, attrs=attrs)
