"""A run's spans as a report draws them: one row per span, in start order, with its depth
in the run's tree, what it did (agent, model call, tool call), how long it took, the tokens
it recorded, whether it failed, and which of the run's steps it carries.

Built from the completed ``Run`` the checks judged (offline: ``check --html``), so the rows
and the verdict come from the same spans. Text from the spans (names, tool names) is raw
here, as reasons are in a verdict: the renderer masks it on the way out.
"""
from __future__ import annotations

from typing import NamedTuple

from faultgate_stream.model.records import EXECUTE_TOOL, INVOKE_AGENT, SpanRecord
from faultgate_stream.model.run import USAGE_IN, USAGE_OUT, Run

ERROR = 2  # OTLP status code


class TimelineStep(NamedTuple):
    span_id: str
    name: str
    kind: str          # agent | model | tool | span
    tool: str          # the tool a tool span ran; "" otherwise
    depth: int         # 0 for the run's top-most spans
    start_ns: int
    end_ns: int        # 0 when the span recorded no end
    tokens: int | None  # input plus output tokens, None when the span recorded none
    failed: bool       # status error, or error.type set
    steps: tuple[int, ...]  # the run's steps (Step.index) this span carries


def kind_of(span: SpanRecord) -> str:
    if span.operation == INVOKE_AGENT:
        return "agent"
    if span.tool is not None or span.operation == EXECUTE_TOOL:
        return "tool"
    if span.operation:  # chat, text_completion, generate_content, embeddings, ...
        return "model"
    return "span"


def _tokens(span: SpanRecord) -> int | None:
    total, seen = 0, False
    for key in (USAGE_IN, USAGE_OUT):
        v = span.attrs.get(key)
        # what senders wrote: a bool or a non-finite float is not a count (as Run.usage_tokens reads them)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) != float("inf"):
            total += int(v)
            seen = True
    return total if seen else None


def timeline(run: Run) -> tuple[TimelineStep, ...]:
    spans = run.spans  # in start order
    steps_of: dict[str, list[int]] = {}
    for st in run.steps:
        steps_of.setdefault(st.span_id, []).append(st.index)
    parent = {s.span_id: s.parent_id for s in spans}
    depth: dict[str, int] = {}

    def depth_of(span_id: str) -> int:
        # iterative, and bounded by the run's size: a parent loop in bad input ends the walk
        chain, cur = [], span_id
        while cur in parent and cur not in depth and len(chain) <= len(parent):
            chain.append(cur)
            cur = parent[cur]
        d = depth.get(cur, -1) if cur in parent else -1
        for sid in reversed(chain):
            d += 1
            depth[sid] = d
        return depth[span_id]

    return tuple(TimelineStep(s.span_id, s.name, kind_of(s), s.tool.name if s.tool is not None else "",
                              depth_of(s.span_id), s.start_ns, s.end_ns, _tokens(s),
                              s.status_code == ERROR or bool(s.error_type), tuple(steps_of.get(s.span_id, ())))
                 for s in spans)
