"""A multi-agent run seen agent by agent: each step belongs to its nearest ``invoke_agent``
ancestor, so each agent can be held to its own rules."""
from __future__ import annotations

from faultgate_stream.model.ancestry import NearestAgent
from faultgate_stream.model.records import RunKey, SpanRecord
from faultgate_stream.model.run import AGENT_NAME, Run


def _name(s: SpanRecord) -> str:
    v = s.attrs.get(AGENT_NAME)
    return str(v) if v else (s.name.removeprefix("invoke_agent ").strip() or "agent")


def agent_views(run: Run) -> list[tuple[str, Run]]:
    """(agent name, the run as that agent saw it). A single-agent run is its own view; in a
    multi-agent run each nested agent's view holds the spans under it and not under a
    deeper agent, with the agent's span as root; the top agent keeps the rest."""
    agents = [s for s in run.spans if s.is_agent]
    if len(agents) <= 1 or run.root is None:
        return [(run.agent, run)]
    by_id = {s.span_id: s for s in run.spans}
    nearest = NearestAgent()  # linear in the run, however deep (issue 9, defect 12)
    for s in run.spans:
        nearest.add(s.span_id, s.parent_id, s.span_id if s.is_agent else None)
    groups: dict[str, list[SpanRecord]] = {}
    for s in run.spans:
        owner = nearest.nearest(s.span_id) or run.root.span_id
        groups.setdefault(owner, []).append(s)
    views = []
    for owner, spans in groups.items():
        if owner == run.root.span_id:
            views.append((run.agent, Run(run.key, spans, run.root, run.completion)))
        else:
            agent = by_id[owner]
            views.append((_name(agent), Run(RunKey(run.trace_id, owner), spans, agent, run.completion)))
    return views
