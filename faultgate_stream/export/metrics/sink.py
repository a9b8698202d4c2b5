"""Verdicts -> Prometheus metrics, with ``{trace_id, span_id}`` exemplars.

Exemplars render only in OpenMetrics exposition and each series keeps the latest one; the
two ids take 63 of the 128 characters OpenMetrics allows.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from operator import attrgetter

from faultgate_stream.export.metrics.config import DEFAULT_MAX_LABEL_LENGTH
from faultgate_stream.export.metrics.labels import OTHER, BoundedLabel
from faultgate_stream.model.series import EXEMPLAR_MAX_RUNES, EXEMPLAR_TOO_LONG
from faultgate_stream.model.session import SessionVerdict
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.model.verdict import CLEAN, FAILED, UNDECIDED, EarlyFinding, RunVerdict

# Agent names kept masked; beyond ``metrics.max_agents`` they fold into "other" anyway.
MAX_MASKED = 4096


# CheckResult.measures name -> the counter it adds to (only the loop check measures these)
WASTE = {"steps": "faultgate_loop_waste_steps", "seconds": "faultgate_loop_waste_seconds",
         "tokens": "faultgate_loop_waste_tokens", "cost_usd": "faultgate_loop_waste_cost_usd"}


_FIRED, _UNDECIDED, _CHECK = attrgetter("fired"), attrgetter("undecided"), attrgetter("check")


class MetricsSink:
    """A ``VerdictConsumer``. The per-verdict series are ``model/series.py``'s: updated by
    label tuple, with one exemplar (validated once) and one clock reading per verdict."""

    def __init__(self, telemetry: Telemetry, max_agents: int, max_label_length: int = DEFAULT_MAX_LABEL_LENGTH,
                 redact: Callable[[str], str] | None = None) -> None:
        self.t = telemetry
        bounded = BoundedLabel("agent", max_agents, telemetry["faultgate_label_values_folded"],
                               telemetry["faultgate_label_values_shortened"], max_label_length)
        mask = redact or (lambda s: s)
        masked: dict[str, str] = {}
        # names whose label is settled: masked, short enough and among the first
        # ``max_agents``, so that no bound is hit (and counted) again by looking them up
        labelled: dict[str, str] = {}

        def agent(name: str) -> str:
            label = labelled.get(name)
            if label is not None:
                return label
            # masked before it is cut: an email or a key in an agent name must not leave
            # half-masked. A service sees few agent names, and masking one ran every
            # redaction pattern on every verdict: each name is masked once (the table is
            # cleared at MAX_MASKED, so a flood of names costs time, not memory).
            m = masked.get(name)
            if m is None:
                if len(masked) >= MAX_MASKED:
                    masked.clear()
                m = masked[name] = mask(name)
            label = bounded(m)
            if label == (m or "unknown") and label != OTHER:
                if len(labelled) >= MAX_MASKED:
                    labelled.clear()
                labelled[name] = label
            return label

        self.agent = agent
        self._labelled = labelled  # read first by ``verdict``: a settled name costs no call
        self._runs, self._fired, self._early = (telemetry[n] for n in (
            "faultgate_runs", "faultgate_check_fired", "faultgate_check_early_fired"))
        self._shadow, self._outcome, self._amendments = (telemetry[n] for n in (
            "faultgate_shadow_check_fired", "faultgate_outcome_runs", "faultgate_verdict_amendments"))
        self._duration, self._steps, self._delay = (telemetry[n] for n in (
            "faultgate_run_duration_seconds", "faultgate_run_steps", "faultgate_verdict_delay_seconds"))
        self._waste = {name: telemetry[metric] for name, metric in WASTE.items()}
        self._sessions, self._session_fired = (telemetry[n] for n in (
            "faultgate_session_verdicts", "faultgate_session_check_fired"))
        self._unread = telemetry["faultgate_unread_spans"]

    def early(self, finding: EarlyFinding) -> None:
        self._early.labels(self.agent(finding.agent), finding.check).inc(
            exemplar={"trace_id": finding.trace_id, "span_id": finding.span_id})

    def verdict(self, v: RunVerdict) -> None:
        agent = self._labelled.get(v.agent) or self.agent(v.agent)
        ex = {"trace_id": v.key.trace_id}
        if v.root_span_id:
            ex["span_id"] = v.root_span_id
        if v.revision:
            # the run was counted with its first verdict: an amendment is counted as one
            self._amended(agent, v, ex)
            return
        results = v.results
        # C-level scans of the results (a Python loop over them was ~100 bytecodes a run):
        # undecided matters only when none fired; the outcome check is looked for by name
        # first, since most rulesets have none
        fired = list(filter(_FIRED, results))
        verdict = FAILED if fired else (UNDECIDED if any(map(_UNDECIDED, results)) else CLEAN)
        outcome = None
        if "outcome" in map(_CHECK, results):
            outcome = next((r for r in results if r.check == "outcome" and r.confidence > 0), None)
        # the exemplar's label names and values: "trace_id" (8) and "span_id" (7)
        if 8 + len(v.key.trace_id) + (7 + len(v.root_span_id) if v.root_span_id else 0) > EXEMPLAR_MAX_RUNES:
            # as prometheus_client did: the run is counted, then the exemplar refused
            self._runs.inc((agent, verdict, v.completion.value))
            raise ValueError(EXEMPLAR_TOO_LONG)
        now = time.time()
        # ``_value_``: the member's value as Enum keeps it, without its ``value`` property
        # (two Python calls a run)
        self._runs.inc((agent, verdict, v.completion._value_), 1, ex, now)
        for r in fired:
            self._fired.inc((agent, r.check, r.severity.value), 1, ex, now)
            for name, value in r.measures:
                # the loop's waste, one counter per figure it measured; a sender's negative
                # token count is not waste (and a counter refuses it)
                if name in WASTE and value > 0:
                    self._waste[name].inc((agent,), value, ex, now)
        for r in v.shadow:
            if r.fired:
                self._shadow.inc((agent, r.check), 1, ex, now)
        for kind, n in v.unread:  # kinds: model/unread.py's KINDS
            self._unread.inc((agent, kind), n, ex, now)
        by_agent = (agent,)
        latency = v.measures.get("latency_ms")
        if latency is not None:
            self._duration.observe(by_agent, latency / 1000, ex, now)
        self._steps.observe(by_agent, v.steps, ex, now)
        if outcome is not None:
            # Luck Rate's inputs: a passing output reached by a path on which any check
            # fired (warnings included) was lucky
            dirty = any(r.fired for r in results if r.check != "outcome")
            self._outcome.inc((agent, "fail" if outcome.fired else "pass", "dirty" if dirty else "clean"), 1, ex, now)
        if v.root_arrival_ns and v.decided_ns >= v.root_arrival_ns:
            self._delay.observe(by_agent, (v.decided_ns - v.root_arrival_ns) / 1e9, ex, now)

    def session(self, s: SessionVerdict) -> None:
        agent = self.agent(s.agent)
        now = time.time()
        self._sessions.inc((agent, s.verdict, s.end.value), 1, None, now)
        for r in s.fired:
            self._session_fired.inc((agent, r.check), 1, None, now)

    def _amended(self, agent: str, v: RunVerdict, ex: dict[str, str]) -> None:
        now = {r.check: r for r in v.results}
        for check in v.amended_checks:
            r = now.get(check)
            result = "undecided" if r is None or r.undecided else ("fired" if r.fired else "passed")
            self._amendments.labels(agent, check, result).inc(exemplar=ex)
