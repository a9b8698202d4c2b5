"""Agent runs of known shape as OTLP/JSON, for drift and session tests: an ``invoke_agent``
root (agent name and version, optional session id, end flag and session attributes, the
user's prompt and the answer) over tool spans, with token usage on the root.

``version_runs`` draws a version's runs from a tool mix: each run calls a tool sequence
picked by weight, so two files drawn from the same mix differ only by chance, and a
version whose mix is shifted differs by construction.
"""
from __future__ import annotations

import json
import random
from itertools import count
from typing import Any

from tests.genai_runs import _attrs

T0 = 1_800_000_000_000_000_000
_ids = count(0x7100)

# A support agent's trajectories and how often baseline v1 takes each: (tools, weight).
V1_MIX = ((("lookup_order", "answer_faq"), 40), (("lookup_order",), 25), (("search_kb", "search_kb", "answer_faq"), 20),
          (("lookup_order", "issue_refund"), 10), (("search_kb", "escalate"), 5))
# v2 escalates and searches far more and answers from the FAQ less: a shifted mix.
V2_MIX = ((("lookup_order", "answer_faq"), 15), (("lookup_order",), 15), (("search_kb", "search_kb", "answer_faq"), 25),
          (("lookup_order", "issue_refund"), 10), (("search_kb", "escalate"), 35))


def run(agent: str, version: str, tools: tuple[str, ...], *, start_ns: int, tokens: int | None = 1500,
        session: str | None = None, end: bool = False, prompt: str = "Where is my order?",
        answer: str = "It ships tomorrow.", attrs: dict[str, Any] | None = None, failed: tuple[int, ...] = (),
        cost: float | None = None) -> list[dict[str, Any]]:
    """The spans of one run (OTLP/JSON span objects); tool ``i`` in ``failed`` has an error status."""
    n = next(_ids)
    tid = f"{n:032x}"
    root = f"{n:08x}00000001"
    step = 100_000_000
    spans = []
    for i, tool in enumerate(tools):
        s = {"traceId": tid, "spanId": f"{n:08x}{i + 2:08x}", "parentSpanId": root, "name": f"execute_tool {tool}",
             "startTimeUnixNano": str(start_ns + (i + 1) * step), "endTimeUnixNano": str(start_ns + (i + 1) * step + step // 2),
             "kind": 1, "attributes": _attrs({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
                                              "gen_ai.tool.call.arguments": json.dumps({"q": f"{tool} {i}"}),
                                              "gen_ai.tool.call.result": json.dumps({"ok": i not in failed})})}
        if i in failed:
            s["status"] = {"code": 2, "message": "tool failed"}
        spans.append(s)
    root_attrs: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent, "gen_ai.agent.version": version,
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": prompt}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]),
    }
    if tokens is not None:
        root_attrs["gen_ai.usage.input_tokens"] = tokens * 2 // 3
        root_attrs["gen_ai.usage.output_tokens"] = tokens - tokens * 2 // 3
    if cost is not None:
        root_attrs["faultgate.cost_usd"] = cost
    if session is not None:
        root_attrs["session.id"] = session
    if end:
        root_attrs["faultgate.session.end"] = True
    root_attrs.update(attrs or {})
    spans.insert(0, {"traceId": tid, "spanId": root, "name": f"invoke_agent {agent}",
                     "startTimeUnixNano": str(start_ns), "endTimeUnixNano": str(start_ns + (len(tools) + 1) * step),
                     "kind": 1, "attributes": _attrs(root_attrs)})
    return spans


def document(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {"attributes": _attrs({"service.name": "support"})},
                               "scopeSpans": [{"scope": {"name": "agent"}, "spans": spans}]}]}


def version_runs(agent: str, version: str, mix, n: int, seed: int, start_ns: int = T0) -> list[dict[str, Any]]:
    """``n`` runs drawn from ``mix``, one a second from ``start_ns``; tokens vary by tool count."""
    rng = random.Random(seed)
    sequences = [m[0] for m in mix]
    weights = [m[1] for m in mix]
    spans: list[dict[str, Any]] = []
    for i in range(n):
        tools = rng.choices(sequences, weights)[0]
        spans += run(agent, version, tools, start_ns=start_ns + i * 10**9,
                     tokens=700 * len(tools) + rng.randrange(0, 300))
    return spans
