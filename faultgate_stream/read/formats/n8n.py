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

from typing import Any

from faultgate_stream.model.records import SpanRecord
from faultgate_stream.read.formats.shared import (
    agent_root, derived_trace_id, error_text, measures, objects, records, span, strictly_increasing, to_ns,
    tool_span,
)

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


def _execution(x: dict[str, Any], where: str) -> list[SpanRecord]:
    run_data = _run_data(x)
    if not isinstance(run_data, dict):
        raise ValueError(f"{where}: no data.resultData.runData object")
    tid = str(x["id"]) if x.get("id") not in (None, "") else derived_trace_id(x)
    entries: list[tuple[str, int, dict[str, Any]]] = []
    for node, runs in run_data.items():
        for i, e in enumerate(objects(runs if isinstance(runs, list) else [runs], f"{where}.runData[{node!r}]")):
            entries.append((node, i, e))
    # One ordering for all entries: the two keys live in different number spaces.
    if entries and all("executionIndex" in e for _, _, e in entries):
        entries.sort(key=lambda t: t[2]["executionIndex"])
    else:
        entries.sort(key=lambda t: t[2].get("startTime") or 0)

    calls = [(node, i, e) for node, i, e in entries if _kind(e)]
    # A tool or model call names the agent node that ran it as its source.
    agents = {src["previousNode"] for _, _, e in calls for src in (e.get("source") or [])
              if isinstance(src, dict) and src.get("previousNode")}
    trigger = next((e for _, _, e in entries if not e.get("source")), None)
    prompt = _prompt(_item(trigger.get("data"), "main")) if trigger else ""
    outputs = [_item(e.get("data"), "main") or {} for node, _, e in entries if node in agents]
    answer = next((o["output"] for o in reversed(outputs) if isinstance(o.get("output"), str)), "")

    root_id = "execution"
    # Milliseconds tie often: nudged apart, start-time order is the order chosen above.
    starts = strictly_increasing([int(e.get("startTime") or 0) * MS for _, _, e in calls])
    spans = [_call(tid, root_id, node, i, e, start) for (node, i, e), start in zip(calls, starts)]

    begun = [int(e["startTime"]) * MS for _, _, e in entries if e.get("startTime")]
    ended = [(int(e["startTime"]) + int(e.get("executionTime") or 0)) * MS for _, _, e in entries if e.get("startTime")]
    result = x["data"]["resultData"]
    error = error_text(result.get("error"))
    if not error and str(x.get("status", "")).lower() in FAILED_STATUSES:
        error = str(x["status"])
    workflow = x.get("workflowData") if isinstance(x.get("workflowData"), dict) else {}
    name = str(workflow.get("name") or min(agents, default="") or "n8n")
    root = agent_root(tid, root_id, name, to_ns(x.get("startedAt")) or min(begun, default=0),
                      to_ns(x.get("stoppedAt")) or max(ended, default=0), prompt=prompt, answer=answer, error=error)
    return [root, *spans]


def _call(tid: str, root_id: str, node: str, run_index: int, e: dict[str, Any], start: int) -> SpanRecord:
    span_id = f"{node}#{run_index}"
    end = start + int(e.get("executionTime") or 0) * MS
    error = error_text(e.get("error"))
    args = _item(e.get("inputOverride"), "ai_tool")
    if args is not None:
        # The injected call id is not an argument: it would read as an identifier grounded in nothing.
        args = {k: v for k, v in args.items() if k != "id"}
        out = _item(e.get("data"), "ai_tool") or {}
        return tool_span(tid, span_id, root_id, node, start, end, args, out.get("response"),
                         ok=_ok(e), error=error)
    out = _item(e.get("data"), "ai_languageModel") or {}
    usage = out.get("tokenUsage") if isinstance(out.get("tokenUsage"), dict) else {}
    try:
        finish = out["response"]["generations"][0][0]["generationInfo"]["finish_reason"]
    except (KeyError, IndexError, TypeError):
        finish = None
    attrs = measures(input_tokens=usage.get("promptTokens"), output_tokens=usage.get("completionTokens"),
                     finish_reason=finish)
    return span(tid, span_id, root_id, node, start, end, "chat",
                error=error or ("" if _ok(e) else "failed"), attrs=attrs)
