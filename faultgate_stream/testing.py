"""Builders for tests and examples: spans of an agent run without writing OTLP by hand.

Shipped in the package (as structlog ships ``testing.py``) so that every test suite,
including a user's, builds runs the same way.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import count
from typing import Any

from faultgate_stream.model.records import SpanRecord
from faultgate_stream.read.conventions import build_span

_ids = count(1)


def span_id() -> str:
    return f"{next(_ids):016x}"


def trace_id() -> str:
    return f"{next(_ids):032x}"


def span(trace: str, name: str, *, parent: str | None = None, sid: str | None = None, start_s: float = 0.0,
         end_s: float | None = None, status: int = 0, message: str = "", **attrs: Any) -> SpanRecord:
    """A span; ``attrs`` use underscores for dots (``gen_ai__tool__name``) or pass ``attributes=``."""
    a = dict(attrs.pop("attributes", {}))
    a.update({k.replace("__", "."): v for k, v in attrs.items()})
    start = int(1_700_000_000e9 + start_s * 1e9)
    end = int(1_700_000_000e9 + (end_s if end_s is not None else start_s + 0.1) * 1e9)
    return build_span(trace, sid or span_id(), parent, name, start, end, status, message, a)


def agent(trace: str, *, name: str = "agent", prompt: str = "", answer: str = "", sid: str | None = None,
          parent: str | None = None, start_s: float = 0.0, end_s: float = 10.0, **attrs: Any) -> SpanRecord:
    a: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}
    if prompt:
        a["gen_ai.input.messages"] = json.dumps([{"role": "user", "parts": [{"type": "text", "content": prompt}]}])
    if answer:
        a["gen_ai.output.messages"] = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}])
    a.update({k.replace("__", "."): v for k, v in attrs.items()})
    return span(trace, f"invoke_agent {name}", parent=parent, sid=sid, start_s=start_s, end_s=end_s, attributes=a)


def tool(trace: str, parent: str | None, name: str, arguments: Any = "", result: Any = "", *,
         start_s: float = 1.0, status: int = 0, sid: str | None = None, call_id: str = "") -> SpanRecord:
    a: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                         "gen_ai.tool.call.arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                         "gen_ai.tool.call.result": result if isinstance(result, str) else json.dumps(result)}
    if call_id:
        a["gen_ai.tool.call.id"] = call_id
    return span(trace, f"execute_tool {name}", parent=parent, sid=sid, start_s=start_s, status=status, attributes=a)


def simple_run(tools: list[tuple[str, Any, Any]], *, prompt: str = "question?", answer: str = "answer.",
               name: str = "agent", trace: str | None = None, **root_attrs: Any) -> list[SpanRecord]:
    """A root and one tool span per (name, arguments, result), a second apart."""
    t = trace or trace_id()
    root = agent(t, name=name, prompt=prompt, answer=answer, end_s=len(tools) + 2.0, **root_attrs)
    return [root] + [tool(t, root.span_id, n, a, r, start_s=1.0 + i) for i, (n, a, r) in enumerate(tools)]


def batches(spans: list[SpanRecord], sizes: Iterator[int]) -> list[list[SpanRecord]]:
    out, i = [], 0
    while i < len(spans):
        n = max(1, next(sizes))
        out.append(spans[i:i + n])
        i += n
    return out
