"""Which run each span of a trace belongs to, from the parent links known so far.

A run is the subtree under a top-most ``invoke_agent`` span; a nested ``invoke_agent`` is
a sub-agent inside its parent's run. A trace with no ``invoke_agent`` at all is one run
under its parentless span, as faultgate treats it. A span whose chain of parents breaks
at a span not seen yet is *unattached*: its root may still arrive. A span above every
agent (an HTTP server span around the agent, say) belongs to no run.
"""
from __future__ import annotations

from faultgate_stream.model.records import SpanRecord

class Partition:
    __slots__ = ("runs", "unattached", "outside")   # (not a dataclass: see assemble/assembler.py)

    def __init__(self) -> None:
        self.runs: dict[str, list[SpanRecord]] = {}  # root span id -> members (root included)
        self.unattached: list[SpanRecord] = []
        self.outside: list[SpanRecord] = []


def partition(spans: dict[str, SpanRecord]) -> Partition:
    has_agent = any(s.is_agent for s in spans.values())
    out = Partition()
    top = _tops(spans)
    for s in spans.values():
        top_agent, end = top[s.span_id]
        if top_agent is not None:
            out.runs.setdefault(top_agent.span_id, []).append(s)
        elif end.parent_id and end.parent_id not in spans:
            out.unattached.append(s)  # the chain breaks below any agent: its root may come
        elif has_agent:
            out.outside.append(s)
        else:
            out.runs.setdefault(end.span_id, []).append(s)
    if out.unattached and has_agent:
        _above_runs(spans, out)
    if out.unattached and has_agent and len(out.runs) == 1:
        _adopt(spans, out)
    return out


def _above_runs(spans: dict[str, SpanRecord], out: Partition) -> None:
    """A span above a run's root whose own chain breaks (the trace's root was never sent)
    is above every agent: outside, not an orphan run of its own."""
    above: set[str] = set()
    for root_id in out.runs:
        cur = spans[root_id].parent_id
        while cur and cur in spans and cur not in above:
            above.add(cur)
            cur = spans[cur].parent_id
    out.outside += [s for s in out.unattached if s.span_id in above]
    out.unattached = [s for s in out.unattached if s.span_id not in above]


def _tops(spans: dict[str, SpanRecord]) -> dict[str, tuple[SpanRecord | None, SpanRecord]]:
    """Per span: (its top-most agent ancestor or itself, None when there is none; the
    top-most span of its chain). Each span's answer is built from its parent's, once, so a
    trace costs one step per span however deep it is (a walk from every span cost the
    depth each: 50 million steps for a 9,999-span chain; issue 9, defect 12). A parent
    loop (malformed input) ends its chain where the loop closes."""
    top: dict[str, tuple[SpanRecord | None, SpanRecord]] = {}
    for s in spans.values():
        if s.span_id in top:
            continue
        path: list[SpanRecord] = []
        on_path: set[str] = set()
        cur: SpanRecord | None = s
        above: tuple[SpanRecord | None, SpanRecord] | None = None
        while cur is not None:
            known = top.get(cur.span_id)
            if known is not None:
                above = known
                break
            if cur.span_id in on_path:  # a loop: the chain ends at the span before it
                break
            path.append(cur)
            on_path.add(cur.span_id)
            cur = spans.get(cur.parent_id) if cur.parent_id else None
        for node in reversed(path):
            if above is None:
                above = (node if node.is_agent else None, node)
            else:
                agent, end = above
                above = (agent if agent is not None else (node if node.is_agent else None), end)
            top[node.span_id] = above
    return top


def _adopt(spans: dict[str, SpanRecord], out: Partition) -> None:
    """A fragment whose parent is missing from the export (a span the exporter dropped or
    never sent), in a trace with exactly one agent run whose time window holds it, is part
    of that run, not an orphan run beside it."""
    root_id, members = next(iter(out.runs.items()))
    root = spans[root_id]
    if not root.end_ns:
        return
    inside = [s for s in out.unattached if root.start_ns <= s.start_ns and (s.end_ns or s.start_ns) <= root.end_ns]
    if inside:
        members.extend(inside)
        out.unattached = [s for s in out.unattached if not (root.start_ns <= s.start_ns
                                                             and (s.end_ns or s.start_ns) <= root.end_ns)]
