"""n8n execution exports -> spans: ``GET /api/v1/executions/{id}?includeData=true`` (one
execution, a list of them, or an API page under ``data``).

A run entry of ``data.resultData.runData`` is a tool call exactly when its ``inputOverride``
has an ``ai_tool`` item, so no list of tool node types is needed: the arguments are that
item's json without the ``id`` the tool-calling layer injects, the result is the
``response`` of the entry's ``ai_tool`` output, and the call succeeded when
``executionStatus`` is ``success``. Entries with an ``ai_languageModel`` input are model
calls (tokens, finish reason). Entries run in ``executionIndex`` order when every entry has
one, else in ``startTime`` order (milliseconds, so ties are common).

The execution is the run; its id is the trace id. The root is named after the workflow and
carries the trigger's input as the prompt and the agent node's output as the answer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.read.formats.shared import (
    agent_root, derived_trace_id, error_text, measures, objects, records, span, strictly_increasing, to_ns,
    tool_span,
)

# The field names this format's records carry: how close an unrecognised file came to it.
SIGNATURE = frozenset({"data", "resultData", "runData", "workflowData", "finished", "mode", "startedAt", "stoppedAt"})
NEEDS = (("data.resultData.runData",),)

MS = 1_000_000
# Where a trigger's output item keeps the user's text: the chat trigger's ``chatInput``, or a
# field of a webhook's ``body``.
PROMPT_KEYS = ("chatInput", "message", "input", "text", "prompt", "query", "question")
FAILED_STATUSES = ("error", "crashed", "failed")


def _run_data(x: Any) -> Any:
    try:
        return x["data"]["resultData"]["runData"]
    except (KeyError, TypeError):
        return None


def _executions(doc: Any) -> list[Any]:
    single = isinstance(doc, dict) and isinstance(doc.get("data"), dict) and "resultData" in doc["data"]
    return [doc] if single else records(doc, "data")


def detect(doc: Any) -> bool:
    execs = _executions(doc)
    return bool(execs) and all(isinstance(_run_data(x), dict) for x in execs)


def read(doc: Any) -> list[SpanRecord]:
    return [s for i, x in enumerate(objects(_executions(doc), "executions")) for s in _execution(x, f"executions[{i}]")]


def _item(output: Any, channel: str) -> dict[str, Any] | None:
    """The json of an entry's first item on ``channel`` (``ai_tool``, ``main``, ...)."""
    try:
        item = output[channel][0][0]["json"]
    except (KeyError, IndexError, TypeError):
        return None
    return item if isinstance(item, dict) else None


def _ok(entry: dict[str, Any]) -> bool:
    # Executions recorded before n8n had executionStatus say a failure only with ``error``.
    if "executionStatus" in entry:
        return entry["executionStatus"] == "success"
    return not entry.get("error")


def _prompt(item: dict[str, Any] | None) -> str:
    for src in (item, (item or {}).get("body")):
        if isinstance(src, str) and src:
            return src
        if isinstance(src, dict):
            text = next((src[k] for k in PROMPT_KEYS if isinstance(src.get(k), str) and src[k]), "")
            if text:
                return text
    return ""


def _kind(e: dict[str, Any]) -> str:
    """``tool`` or ``model`` for the entries a run's spans come from; "" for other nodes."""
    if _item(e.get("inputOverride"), "ai_tool") is not None:
        return "tool"
    if _item(e.get("inputOverride"), "ai_languageModel") is not None:
        return "model"
    return ""


def _ms(e: dict[str, Any], key: str, where: str) -> int:
    """An entry's millisecond field (``startTime`` is epoch ms) as nanoseconds; 0 when absent."""
    v = e.get(key) or 0
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InputError(f"{where}.{key}: {v!r} is not a number of milliseconds")
    return int(v * MS)


@dataclass(frozen=True)
class _Entry:
    """One run of one node: ``runData[node][run_index]``."""

    node: str
    run_index: int
    raw: dict[str, Any]
    start_ns: int
    took_ns: int
    kind: str


def _entries(run_data: dict[str, Any], where: str) -> list[_Entry]:
    """Every node run, in the order the execution ran them."""
    out = []
    for node, runs in run_data.items():
        here = f"{where}.runData[{node!r}]"
        for i, e in enumerate(objects(runs if isinstance(runs, list) else [runs], here)):
            out.append(_Entry(node, i, e, _ms(e, "startTime", f"{here}[{i}]"),
                              _ms(e, "executionTime", f"{here}[{i}]"), _kind(e)))
    # One key for all entries: executionIndex and startTime live in different number spaces,
    # so mixing them per entry would scramble the order.
    if out and all(isinstance(e.raw.get("executionIndex"), int) for e in out):
        return sorted(out, key=lambda e: e.raw["executionIndex"])
    return sorted(out, key=lambda e: e.start_ns)


def _execution(x: dict[str, Any], where: str) -> list[SpanRecord]:
    run_data = _run_data(x)
    if not isinstance(run_data, dict):
        raise InputError(f"{where}: no data.resultData.runData object")
    tid = str(x["id"]) if x.get("id") not in (None, "") else derived_trace_id(x)
    entries = _entries(run_data, where)
    calls = [e for e in entries if e.kind]
    # A tool or model call names the agent node that ran it as its source.
    agents = {src["previousNode"] for e in calls for src in (e.raw.get("source") or [])
              if isinstance(src, dict) and src.get("previousNode")}
    trigger = next((e for e in entries if not e.raw.get("source")), None)
    prompt = _prompt(_item(trigger.raw.get("data"), "main")) if trigger else ""
    outputs = [_item(e.raw.get("data"), "main") or {} for e in entries if e.node in agents]
    answer = next((o["output"] for o in reversed(outputs) if isinstance(o.get("output"), str)), "")

    root_id = "execution"
    # Milliseconds tie often: nudged apart, start-time order is the order chosen above.
    starts = strictly_increasing([e.start_ns for e in calls])
    spans = [_call(tid, root_id, e, start) for e, start in zip(calls, starts)]

    timed = [e for e in entries if e.start_ns]
    error = error_text(x["data"]["resultData"].get("error"))
    if not error and str(x.get("status", "")).lower() in FAILED_STATUSES:
        error = str(x["status"])
    workflow = x.get("workflowData") if isinstance(x.get("workflowData"), dict) else {}
    name = str(workflow.get("name") or min(agents, default="") or "n8n")
    root = agent_root(tid, root_id, name, to_ns(x.get("startedAt")) or min((e.start_ns for e in timed), default=0),
                      to_ns(x.get("stoppedAt")) or max((e.start_ns + e.took_ns for e in timed), default=0),
                      prompt=prompt, answer=answer, error=error)
    return [root, *spans]


def _call(tid: str, root_id: str, e: _Entry, start: int) -> SpanRecord:
    span_id = f"{e.node}#{e.run_index}"
    end = start + e.took_ns
    error = error_text(e.raw.get("error"))
    if e.kind == "tool":
        # The injected call id is not an argument: it would read as an identifier grounded in nothing.
        args = {k: v for k, v in (_item(e.raw.get("inputOverride"), "ai_tool") or {}).items() if k != "id"}
        out = _item(e.raw.get("data"), "ai_tool") or {}
        return tool_span(tid, span_id, root_id, e.node, start, end, args, out.get("response"),
                         ok=_ok(e.raw), error=error)
    out = _item(e.raw.get("data"), "ai_languageModel") or {}
    usage = out.get("tokenUsage") if isinstance(out.get("tokenUsage"), dict) else {}
    try:
        finish = out["response"]["generations"][0][0]["generationInfo"]["finish_reason"]
    except (KeyError, IndexError, TypeError):
        finish = None
    attrs = measures(input_tokens=usage.get("promptTokens"), output_tokens=usage.get("completionTokens"),
                     finish_reason=finish)
    return span(tid, span_id, root_id, e.node, start, end, "chat",
                error=error or ("" if _ok(e.raw) else "failed"), attrs=attrs)
