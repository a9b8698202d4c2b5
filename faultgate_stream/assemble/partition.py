"""Which run each span of a trace belongs to, from the parent links known so far.

A run is the subtree under a top-most ``invoke_agent`` span; a nested ``invoke_agent`` is
a sub-agent inside its parent's run. A trace with no ``invoke_agent`` at all is one run
under its parentless span, as faultgate treats it. A span whose chain of parents breaks
at a span not seen yet is *unattached*: its root may still arrive. A span above every
agent (an HTTP server span around the agent, say) belongs to no run.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from faultgate_stream.model.records import SpanRecord

@dataclass
class Partition:
    runs: dict[str, list[SpanRecord]] = field(default_factory=dict)  # root span id -> members (root included)
    unattached: list[SpanRecord] = field(default_factory=list)
    outside: list[SpanRecord] = field(default_factory=list)


def partition(spans: dict[str, SpanRecord]) -> Partition:
    has_agent = any(s.is_agent for s in spans.values())
    out = Partition()
    for s in spans.values():
        top_agent, cur, hops = None, s, 0
        while True:
            if cur.is_agent:
                top_agent = cur
            parent = spans.get(cur.parent_id) if cur.parent_id else None
            hops += 1
            # a chain longer than the trace is a parent loop (malformed input): stop there
            if parent is None or hops > len(spans):
                break
            cur = parent
        if top_agent is not None:
            out.runs.setdefault(top_agent.span_id, []).append(s)
        elif cur.parent_id and cur.parent_id not in spans:
            out.unattached.append(s)  # the chain breaks below any agent: its root may come
        elif has_agent:
            out.outside.append(s)
        else:
            out.runs.setdefault(cur.span_id, []).append(s)
    if out.unattached and has_agent and len(out.runs) == 1:
        _adopt(spans, out)
    return out


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
