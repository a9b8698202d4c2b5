"""any-agent's ``AgentTrace`` JSON (``agent.run(...)`` then ``trace.model_dump_json()``) ->
spans.

An ``AgentTrace`` is ``{"spans": [...], "final_output": ...}`` whose spans are OTel SDK spans
serialised field by field (``otel_sdk`` reads their frame: integer ids under ``context``,
``parent.span_id``, lower-case ``status.status_code``, epoch-nanosecond times). Its own
attribute names are mapped onto the GenAI ones: ``call_llm`` is a model call (``chat``)
whose ``gen_ai.output`` (``genai.output`` in older releases) is the answer text, or, with
``gen_ai.output.type`` ``json``, the tool calls it made; an ``execute_tool`` span's
``gen_ai.tool.args`` are the arguments and its ``gen_ai.output`` the result.
``final_output`` is the run's answer. any-agent records no finish reasons, so their absence
is not "not captured".
"""
from __future__ import annotations

import json
from typing import Any

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.records import MISSING_FINISH, SpanRecord
from faultgate_stream.read import payload
from faultgate_stream.read.formats import otel_sdk
from faultgate_stream.read.formats.shared import objects

OUTPUT = ("gen_ai.output", "genai.output")
OUTPUT_TYPE = ("gen_ai.output.type", "genai.output.type")
ARGS = "gen_ai.tool.args"
SIGNATURE = frozenset({"spans", "final_output"})
NEEDS = (("spans.context.trace_id",),
         ("spans.context.span_id",),
         ("spans.name",),
         ("final_output", "spans.attributes"))


def _markers(s: Any) -> bool:
    a = s.get("attributes") if isinstance(s, dict) else None
    return isinstance(a, dict) and (ARGS in a or any(k in a for k in OUTPUT)
                                    or a.get("gen_ai.operation.name") == "call_llm")


def detect(doc: Any) -> bool:
    spans = doc.get("spans") if isinstance(doc, dict) else None
    return (isinstance(spans, list) and bool(spans) and all(otel_sdk.is_span(s) for s in spans)
            and ("final_output" in doc or any(_markers(s) for s in spans)))


def _first(a: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((a[k] for k in keys if k in a), None)


def _tool_calls(output: Any) -> list[dict[str, Any]] | None:
    """The tool_call parts of an LLM output that is a JSON list of OpenAI tool calls."""
    calls = payload.load_json(output)
    if not isinstance(calls, list) or not all(isinstance(c, dict) and isinstance(c.get("function"), dict)
                                              for c in calls):
        return None
    return [{"type": "tool_call", "id": str(c.get("id") or ""), "name": str(c["function"].get("name") or "unknown"),
             "arguments": c["function"].get("arguments")} for c in calls]


def _attributes(a: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in a.items() if k not in OUTPUT and k not in OUTPUT_TYPE and k != ARGS}
    op = a.get("gen_ai.operation.name")
    output = _first(a, OUTPUT)
    if op == "call_llm":
        out["gen_ai.operation.name"] = "chat"
        if output is not None:
            calls = _tool_calls(output) if str(_first(a, OUTPUT_TYPE) or "") == "json" else None
            parts = calls if calls is not None else [{"type": "text", "content": payload.render(output)}]
            out["gen_ai.output.messages"] = json.dumps([{"role": "assistant", "parts": parts}], ensure_ascii=False)
    elif op == "execute_tool":
        if ARGS in a:
            out["gen_ai.tool.call.arguments"] = payload.tool_payload(payload.load_json(a[ARGS]))
        if output is not None:
            out["gen_ai.tool.call.result"] = payload.render(output)
    return out


def read(doc: Any) -> list[SpanRecord]:
    spans = objects(doc["spans"], "spans")
    out = []
    for i, s in enumerate(spans):
        attrs = s.get("attributes")
        if not isinstance(attrs, dict):
            raise InputError(f"spans[{i}].attributes: expected an object")
        rec = otel_sdk.span(s, f"spans[{i}]", _attributes(attrs))
        # any-agent's tool spans carry no call id to pair them with the calls a model
        # output names: when a run has tool spans, those message calls are not steps
        out.append(rec._replace(missing=rec.missing & ~MISSING_FINISH,
                                calls_shadowed_by_tool_spans=bool(rec.calls)))
    final = doc.get("final_output")
    if final is not None:
        # the answer belongs to the run's root (the top invoke_agent, parentless)
        for i, r in enumerate(out):
            if r.is_agent and not r.parent_id and not r.answer.strip():
                out[i] = r._replace(answer=payload.render(final) if not isinstance(final, str) else final)
    return out
