"""LangSmith exports -> spans: a list of runs (or an API page under ``runs``), each with a
``run_type`` of ``chain``, ``llm``, ``tool``, ``retriever``, ...

A parentless run that is not a model call is the agent: it becomes the ``invoke_agent`` root
with its ``inputs`` as the prompt, its ``outputs`` as the answer and
``extra.metadata.scenario`` as the scenario. ``tool`` runs are the steps, ``llm`` runs chat
spans (tokens, cost, finish reason); a run with an ``error`` failed. Runs are grouped by
``trace_id``, which reports name as LangSmith gives it.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.model.records import SpanRecord
from faultgate_stream.read.formats.shared import (
    agent_root, error_text, first_object, measures, objects, records, required, span, to_ns, tool_span,
)

# The field names this format's records carry: how close an unrecognised file came to it.
SIGNATURE = frozenset({"run_type", "trace_id", "parent_run_id", "inputs", "outputs", "start_time", "end_time", "error", "extra", "dotted_order"})
NEEDS = (("run_type",),)


def detect(doc: Any) -> bool:
    first = first_object(records(doc, "runs"))
    return first is not None and "run_type" in first


def read(doc: Any) -> list[SpanRecord]:
    runs = objects(records(doc, "runs"), "runs")
    ids = [str(required(r, "id", where=f"runs[{i}]")) for i, r in enumerate(runs)]
    by_id = dict(zip(ids, runs))
    return [_span(_trace_id(r, by_id), rid, r) for rid, r in zip(ids, runs)]


def _trace_id(r: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> str:
    """The run's ``trace_id``; a run exported without one belongs to its top-most ancestor's trace."""
    seen: set[str] = set()
    while not r.get("trace_id"):
        rid = str(r["id"])
        parent = r.get("parent_run_id")
        if not parent or str(parent) not in by_id or rid in seen:
            return rid
        seen.add(rid)
        r = by_id[str(parent)]
    return str(r["trace_id"])


def _finish_reason(outputs: Any) -> Any:
    """The first generation's finish reason: LangChain puts it in ``generation_info``, or in
    the serialized message's ``response_metadata`` (``stop_reason`` for Anthropic)."""
    try:
        g = outputs["generations"][0][0]
    except (KeyError, IndexError, TypeError):
        return None
    if not isinstance(g, dict):
        return None
    info = g.get("generation_info") or {}
    meta = ((g.get("message") or {}).get("kwargs") or {}).get("response_metadata") or {}
    return info.get("finish_reason") or meta.get("finish_reason") or meta.get("stop_reason")


def _span(tid: str, rid: str, r: dict[str, Any]) -> SpanRecord:
    run_type = str(r.get("run_type") or "chain")
    name = str(r.get("name") or run_type)
    parent = str(r["parent_run_id"]) if r.get("parent_run_id") else None
    start, end = to_ns(r.get("start_time")), to_ns(r.get("end_time"))
    error = error_text(r.get("error"))
    attrs = measures(input_tokens=r.get("prompt_tokens"), output_tokens=r.get("completion_tokens"),
                     cost=r.get("total_cost"))
    if parent is None and run_type != "llm":
        extra = r.get("extra") if isinstance(r.get("extra"), dict) else {}
        metadata = extra.get("metadata") or r.get("metadata")
        return agent_root(tid, rid, name, start, end, prompt=r.get("inputs"), answer=r.get("outputs"),
                          metadata=metadata, error=error, attrs=attrs)
    if run_type == "tool":
        return tool_span(tid, rid, parent, name, start, end, r.get("inputs"), r.get("outputs"),
                         error=error, attrs=attrs)
    if run_type == "llm":
        attrs |= measures(finish_reason=_finish_reason(r.get("outputs")))
        return span(tid, rid, parent, name, start, end, "chat", error=error, attrs=attrs)
    return span(tid, rid, parent, name, start, end, run_type, error=error, attrs=attrs)

