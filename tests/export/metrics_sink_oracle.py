"""The metrics sink as it was before its series became plain values (issue 12): the oracle
``test_metrics_sink.py`` holds the sink to. Every declared metric is a ``prometheus_client``
Counter or Histogram on the registry (``OracleTelemetry``), recorded through ``labels()``."""
from __future__ import annotations

import itertools
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Histogram

from faultgate_stream.export.metrics.labels import BoundedLabel
from faultgate_stream.model.telemetry import CATALOG, DEFAULT_ROOT_GRACE_S, delay_buckets
from faultgate_stream.model.verdict import EarlyFinding, RunVerdict

MAX_MASKED = 4096
WASTE = {"steps": "faultgate_loop_waste_steps", "seconds": "faultgate_loop_waste_seconds",
         "tokens": "faultgate_loop_waste_tokens", "cost_usd": "faultgate_loop_waste_cost_usd"}


class OracleTelemetry:
    def __init__(self, root_grace: float = DEFAULT_ROOT_GRACE_S) -> None:
        self.registry = CollectorRegistry()
        self.metrics = {}
        for spec in CATALOG:
            if spec.external:
                continue
            if spec.kind == "counter":
                counter = self.metrics[spec.name] = Counter(spec.name, spec.help, spec.labels, registry=self.registry)
                known = spec.known
                if spec.labels and all(label in known for label in spec.labels):
                    for combination in itertools.product(*(known[label] for label in spec.labels)):
                        counter.labels(*combination)
            elif spec.kind == "histogram":
                buckets = delay_buckets(root_grace) if spec.name == "faultgate_verdict_delay_seconds" else spec.buckets
                self.metrics[spec.name] = Histogram(spec.name, spec.help, spec.labels, registry=self.registry,
                                                    buckets=buckets)

    def __getitem__(self, name: str):
        return self.metrics[name]


class OracleMetricsSink:
    def __init__(self, telemetry: OracleTelemetry, max_agents: int, max_label_length: int = 128,
                 redact: Callable[[str], str] | None = None) -> None:
        self.t = telemetry
        bounded = BoundedLabel("agent", max_agents, telemetry["faultgate_label_values_folded"],
                               telemetry["faultgate_label_values_shortened"], max_label_length)
        mask = redact or (lambda s: s)
        masked: dict[str, str] = {}

        def agent(name: str) -> str:
            # masked before it is cut: an email or a key in an agent name must not leave
            # half-masked. A service sees few agent names, and masking one ran every
            # redaction pattern on every verdict: each name is masked once (the table is
            # cleared at MAX_MASKED, so a flood of names costs time, not memory).
            m = masked.get(name)
            if m is None:
                if len(masked) >= MAX_MASKED:
                    masked.clear()
                m = masked[name] = mask(name)
            return bounded(m)

        self.agent = agent

    def early(self, finding: EarlyFinding) -> None:
        self.t["faultgate_check_early_fired"].labels(self.agent(finding.agent), finding.check).inc(
            exemplar={"trace_id": finding.trace_id, "span_id": finding.span_id})

    def verdict(self, v: RunVerdict) -> None:
        agent = self.agent(v.agent)
        ex = {"trace_id": v.key.trace_id}
        if v.root_span_id:
            ex["span_id"] = v.root_span_id
        t = self.t
        if v.revision:
            # the run was counted with its first verdict: an amendment is counted as one
            self._amended(agent, v, ex)
            return
        t["faultgate_runs"].labels(agent, v.verdict, v.completion.value).inc(exemplar=ex)
        for r in v.fired:
            t["faultgate_check_fired"].labels(agent, r.check, r.severity.value).inc(exemplar=ex)
            for name, value in r.measures:
                # the loop's waste, one counter per figure it measured; a sender's negative
                # token count is not waste (and a counter refuses it)
                if name in WASTE and value > 0:
                    t[WASTE[name]].labels(agent).inc(value, exemplar=ex)
        for r in v.shadow:
            if r.fired:
                t["faultgate_shadow_check_fired"].labels(agent, r.check).inc(exemplar=ex)
        for kind, n in v.unread:
            t["faultgate_unread_spans"].labels(agent, kind).inc(n, exemplar=ex)
        latency = v.measures.get("latency_ms")
        if latency is not None:
            t["faultgate_run_duration_seconds"].labels(agent).observe(latency / 1000, exemplar=ex)
        t["faultgate_run_steps"].labels(agent).observe(v.steps, exemplar=ex)
        outcome = next((r for r in v.results if r.check == "outcome" and r.confidence > 0), None)
        if outcome is not None:
            # Luck Rate's inputs: a passing output reached by a path on which any check
            # fired (warnings included) was lucky
            dirty = any(r.fired for r in v.results if r.check != "outcome")
            t["faultgate_outcome_runs"].labels(agent, "fail" if outcome.fired else "pass",
                                               "dirty" if dirty else "clean").inc(exemplar=ex)
        if v.root_arrival_ns and v.decided_ns >= v.root_arrival_ns:
            t["faultgate_verdict_delay_seconds"].labels(agent).observe((v.decided_ns - v.root_arrival_ns) / 1e9,
                                                                      exemplar=ex)

    def _amended(self, agent: str, v: RunVerdict, ex: dict[str, str]) -> None:
        now = {r.check: r for r in v.results}
        for check in v.amended_checks:
            r = now.get(check)
            result = "undecided" if r is None or r.undecided else ("fired" if r.fired else "passed")
            self.t["faultgate_verdict_amendments"].labels(agent, check, result).inc(exemplar=ex)
