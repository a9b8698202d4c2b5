"""CrewAI tool-usage events -> spans: the event bus's tool events (``ToolUsageFinishedEvent``,
``ToolUsageErrorEvent``) serialized to dicts, as a list or under ``events``.

Every event with a ``tool_name`` is a step, except ``tool_usage_started``, which only
announces a call whose finished or error event follows. ``tool_args`` (a dict, or a string
that may hold JSON) are its arguments and ``output`` its result; it failed when its type ends
in ``error`` (the tool raised: ``error`` says why) or ``failure`` is set (it returned and said
it failed). ``agent_role`` names the agent that made the call; the root is that agent, or
``crew`` when several took part. The events carry no trace id: it is derived from the content.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.model.records import SpanRecord
from faultgate_stream.read.formats.shared import (
    agent_root, derived_trace_id, error_text, objects, records, strictly_increasing, to_ns, tool_span,
)

# The field names this format's records carry: how close an unrecognised file came to it.
SIGNATURE = frozenset({"type", "tool_name", "tool_args", "timestamp", "agent_role", "task_name", "output"})
NEEDS = (("type",), ("tool_name",))

STARTED = "tool_usage_started"


def _events(doc: Any) -> list[Any]:
    return records(doc, "events")


def _is_call(e: dict[str, Any]) -> bool:
    return bool(e.get("tool_name")) and e.get("type") != STARTED


def detect(doc: Any) -> bool:
    events = _events(doc)
    return (bool(events) and all(isinstance(e, dict) and isinstance(e.get("type"), str) for e in events)
            and any(_is_call(e) and e["type"].startswith("tool_") for e in events))


def _failed(e: dict[str, Any]) -> bool:
    return str(e.get("type", "")).endswith("error") or bool(e.get("failure"))


def read(doc: Any) -> list[SpanRecord]:
    events = objects(_events(doc), "events")
    # Events arrive as calls finish, so a slow first call lands last: order by start. The
    # bus writes local time without a zone; read as UTC, it keeps order and durations.
    calls = sorted((e for e in events if _is_call(e)), key=lambda e: to_ns(e.get("started_at")))
    starts = strictly_increasing([to_ns(e.get("started_at")) for e in calls])
    tid = derived_trace_id(doc)
    spans = []
    for n, (e, start) in enumerate(zip(calls, starts)):
        role = str(e.get("agent_role") or "")
        failure = e.get("failure")
        error = error_text(e.get("error")) or (failure if isinstance(failure, str) else "")
        spans.append(tool_span(tid, f"call-{n}", "crew", str(e["tool_name"]), start, to_ns(e.get("finished_at")),
                               e.get("tool_args"), e.get("output"), ok=not _failed(e), error=error,
                               attrs={"gen_ai.agent.name": role} if role else None))
    roles = sorted({str(e["agent_role"]) for e in calls if e.get("agent_role")})
    ends = [s.end_ns for s in spans if s.end_ns]
    root = agent_root(tid, "crew", roles[0] if len(roles) == 1 else "crew", min(starts, default=0),
                      max(ends, default=0))
    return [root, *spans]
