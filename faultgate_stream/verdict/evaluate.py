"""Runs -> verdicts: drives every check through its incremental contract.

Per trace in flight the evaluator keeps each check's state; spans are observed as they
arrive, and an early finding is passed on at once (once per trace and check). When a run
completes, each check gives its verdict over the run's sorted steps.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.model.consumers import VerdictConsumer
from faultgate_stream.model.records import RunKey, SpanRecord
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import EarlyFinding, RunVerdict


@dataclass
class _TraceState:
    states: list[Any]
    early: list[EarlyFinding] = field(default_factory=list)
    fired_early: set[str] = field(default_factory=set)


class Evaluator:
    """A ``RunConsumer``: the assembler's next stage."""

    def __init__(self, checks: list[Check], consumer: VerdictConsumer) -> None:
        self.checks = checks
        self._next = consumer
        self._traces: dict[str, _TraceState] = {}

    def _state(self, trace_id: str) -> _TraceState:
        st = self._traces.get(trace_id)
        if st is None:
            st = self._traces[trace_id] = _TraceState([c.start() for c in self.checks])
        return st

    def span_arrived(self, span: SpanRecord) -> None:
        st = self._state(span.trace_id)
        for check, state in zip(self.checks, st.states):
            reason = check.observe(state, span)
            if reason and check.name not in st.fired_early:
                st.fired_early.add(check.name)
                finding = EarlyFinding(span.trace_id, span.span_id, check.name, reason,
                                       str(span.attrs.get("gen_ai.agent.name", "")))
                st.early.append(finding)
                self._next.early(finding)

    def run_completed(self, run: Run) -> None:
        # The state goes with the trace's first completed run: a later run of the same
        # trace starts afresh, which only affects early findings, never a verdict.
        st = self._traces.pop(run.trace_id, None) or _TraceState([c.start() for c in self.checks])
        members = {s.span_id for s in run.spans}
        results = tuple(c.finish(state, run) for c, state in zip(self.checks, st.states))
        self._next.verdict(RunVerdict(
            key=run.key, scenario=run.scenario, agent=run.agent, agent_version=run.agent_version,
            completion=run.completion, results=results, steps=len(run.steps), spans=len(run.spans),
            first_start_ns=min((s.start_ns for s in run.spans), default=0),
            last_end_ns=max((s.end_ns for s in run.spans), default=0),
            root_arrival_ns=run.root_arrival_ns, decided_ns=run.closed_ns,
            root_span_id=run.root.span_id if run.root is not None else "",
            released_span_ids=frozenset(members) | run.outside_span_ids,
            early=tuple(f for f in st.early if f.span_id in members),
            measures={"tokens": run.usage_tokens, "latency_ms": run.latency_ms, "cost_usd": run.cost_usd},
        ))

    def span_late(self, span: SpanRecord, decided: RunKey) -> None:
        """Late spans are counted by the assembler; their run's verdict is already out."""
