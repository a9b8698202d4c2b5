"""Every metric the service exposes, declared once: name, type, help, labels, owner.

Stages get a ``Telemetry`` built on an injected registry (tests use a fresh one) and only
record; exposition lives in ``export/metrics``. ``docs/metrics.md`` is generated from
``CATALOG`` (``python -m faultgate_stream.model.telemetry``) and a test fails if it
drifts. These names are an interface for alert rules and dashboards: extend, don't rename.

Conservation (DESIGN.md): spans received = accepted + refused (retryable) + rejected
(invalid), and with span export on, accepted = sent + failed + filtered + queue spans
(``faultgate_exporter_*``): every span is exported, in flight, refused or rejected.
"""
from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram

from faultgate_stream.model.series import CounterSeries, HistogramSeries

# Seconds: a run takes from well under a second to many minutes.
RUN_SECONDS = (0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800)
STEPS = (1, 2, 3, 5, 8, 12, 20, 30, 50, 100, 200)
# Root arrival to verdict is root_grace plus the wait for the scan that closes the run (at
# its deadline) and the scan itself, so nearly every run lands just above root_grace:
# buckets are fine there, steps of 10-50 ms up to 250 ms past it, so that a p99 near
# "grace + 100 ms" is read off buckets, not interpolated across a quarter second; coarse
# further out. Runs closed before their grace ran out (evicted, shutdown) fall below it.
DELAY_BELOW_GRACE = (0.25, 0.5, 0.9)                      # fractions of root_grace
DELAY_ABOVE_GRACE = (0.0, 0.01, 0.025, 0.05, 0.075, 0.1, 0.125, 0.15, 0.2, 0.25, 0.5, 1, 2.5, 5, 10, 30,
                     60)  # seconds past it


def delay_buckets(root_grace: float) -> tuple[float, ...]:
    """Verdict-delay buckets for a service whose runs complete ``root_grace`` after their root."""
    below = [round(root_grace * f, 6) for f in DELAY_BELOW_GRACE] if root_grace > 0 else []
    return tuple(sorted({b for b in below if b > 0} | {round(root_grace + d, 6) for d in DELAY_ABOVE_GRACE}))


DEFAULT_ROOT_GRACE_S = 2.0  # assemble's default; the catalog's buckets are drawn for it
DELAY_SECONDS = delay_buckets(DEFAULT_ROOT_GRACE_S)

# Label values known in advance. Error counters whose every label has known values are
# created at zero for each combination when the service starts, so that rate() and
# increase() see the first error (a series born at 1 has no increase) and an alert's
# "not firing" is a real zero, not an absent series. The lists are also the reference in
# docs/metrics.md; a test keeps them in step with the reasons the code records.
TRANSPORTS = ("grpc", "http", "kafka", "wal")   # wal: requests replayed from the write-ahead log at start
REFUSED_REASONS = ("max_traces", "max_bytes", "export_queue", "shutdown", "internal_error", "wal_full", "wal_error")
# too_deep: values nested or numbered past read/bounds.py's limits
REJECTED_SPAN_REASONS = ("invalid_span", "too_deep", "too_large", "undecodable")
REJECTED_LOG_REASONS = ("invalid_log_record", "too_deep", "too_large", "undecodable")
LOG_CONTENT_OUTCOMES = ("joined", "late", "unjoined", "capped", "duplicate")
REJECTED_REQUEST_REASONS = ("undecodable", "too_large", "too_deep", "unsupported_media_type", "unsupported_encoding",
                            "request_timeout", "internal_error")
# A downstream's permanent gRPC status is its code's name; HTTP statuses fold into classes.
# too_large: one span larger than export.max_request_bytes, or than the downstream takes
EXPORT_FAILED_REASONS = ("retries_exhausted", "shutdown", "downstream_rejected", "queue_full", "internal_error",
                         "handed_over", "too_large",
                         "invalid_argument", "not_found", "already_exists", "permission_denied",
                         "resource_exhausted", "failed_precondition", "unimplemented", "internal",
                         "unauthenticated", "unknown", "http_4xx", "http_5xx")
RELOAD_RESULTS = ("applied", "rejected")
# verdict/amend.py: why a decided run left the amendment store
AMEND_EVICTION_REASONS = ("max_runs", "max_bytes", "max_age", "max_run_spans")
CHECK_OUTCOMES = ("fired", "passed", "undecided")
# receive/wal: the disk operation that failed
WAL_OPERATIONS = ("open", "write", "fsync", "read", "delete")
# An fsync of a group commit: ~2 ms on a quiet virtual disk, tens to hundreds under load.
FSYNC_SECONDS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)
# judge/stage.py: why a judge question about a decided run was not answered
# judge/route.py: why a decided run went to the judge, or did not
JUDGE_ROUTES = ("all", "failed", "undecided", "drifted", "sampled", "skipped")
JUDGE_SKIPPED_REASONS = ("budget", "queue_full", "timeout", "error", "evicted", "shutdown", "internal_error")


@dataclass(frozen=True)
class MetricSpec:
    name: str          # without the _total a Counter adds
    kind: str          # counter | histogram | gauge
    help: str
    labels: tuple[str, ...]
    owner: str         # the stage that records it
    buckets: tuple[float, ...] = ()
    external: bool = False  # created by its owner on the registry (gauges read at scrape time, say)
    # Recorded once per verdict or more: kept as plain values (``model/series.py``) rather
    # than as prometheus_client children, whose per-call cost was most of the metrics sink's.
    per_verdict: bool = False
    values: tuple[tuple[str, tuple[str, ...]], ...] = ()  # label -> its known values

    @property
    def known(self) -> dict[str, tuple[str, ...]]:
        return dict(self.values)


CATALOG: tuple[MetricSpec, ...] = (
    MetricSpec("faultgate_runs", "counter", "Runs decided, by verdict (clean/failed/undecided) and completion state.",
               ("agent", "verdict", "completion"), "export/metrics", per_verdict=True),
    MetricSpec("faultgate_check_fired", "counter", "Runs on which a check fired, at the final verdict.",
               ("agent", "check", "severity"), "export/metrics", per_verdict=True),
    MetricSpec("faultgate_check_early_fired", "counter",
               "Violations counted the moment their span arrived, before the run completed.",
               ("agent", "check"), "export/metrics", per_verdict=True),
    MetricSpec("faultgate_outcome_runs", "counter",
               "Runs whose output was judged (outcome pass/fail) by path (clean: no check fired). "
               "Luck Rate = pass & dirty / pass.", ("agent", "outcome", "path"), "export/metrics", per_verdict=True),
    MetricSpec("faultgate_unread_spans", "counter",
               "Spans of decided runs that carry agent work no convention read, by kind (tool, model: calls; "
               "output: an answer): the checks that needed them said undecided.",
               ("agent", "kind"), "export/metrics", per_verdict=True),
    MetricSpec("faultgate_config_reloads", "counter", "SIGHUP reloads of policies and specs, by result.",
               ("result",), "service", values=(("result", RELOAD_RESULTS),)),
    MetricSpec("faultgate_run_duration_seconds", "histogram", "Wall time of a run (root span, else first to last span).",
               ("agent",), "export/metrics", RUN_SECONDS, per_verdict=True),
    MetricSpec("faultgate_run_steps", "histogram", "Tool calls per run.", ("agent",), "export/metrics", STEPS,
               per_verdict=True),
    MetricSpec("faultgate_verdict_delay_seconds", "histogram", "From the root span's arrival to the run's verdict.",
               ("agent",), "export/metrics", DELAY_SECONDS, per_verdict=True),
    MetricSpec("faultgate_receiver_accepted_spans", "counter", "Spans acknowledged to the sender.",
               ("transport",), "receive", values=(("transport", TRANSPORTS),)),
    MetricSpec("faultgate_receiver_refused_spans", "counter",
               "Spans refused with a retryable status (the sender retries them).", ("transport", "reason"), "receive",
               values=(("transport", TRANSPORTS), ("reason", REFUSED_REASONS))),
    MetricSpec("faultgate_receiver_rejected_spans", "counter",
               "Spans rejected as invalid (not retried): malformed ids, undecodable or oversized requests.",
               ("transport", "reason"), "receive", values=(("transport", TRANSPORTS), ("reason", REJECTED_SPAN_REASONS))),
    MetricSpec("faultgate_receiver_rejected_requests", "counter",
               "Requests rejected whole: undecodable, oversized, or of an unsupported content type.",
               ("transport", "reason"), "receive",
               values=(("transport", TRANSPORTS), ("reason", REJECTED_REQUEST_REASONS))),
    MetricSpec("faultgate_receiver_accepted_log_records", "counter",
               "Log records acknowledged to the sender (GenAI content among them is joined to its spans).",
               ("transport",), "receive", values=(("transport", TRANSPORTS),)),
    MetricSpec("faultgate_receiver_refused_log_records", "counter",
               "Log records refused with a retryable status (the sender retries them).", ("transport", "reason"),
               "receive", values=(("transport", TRANSPORTS), ("reason", REFUSED_REASONS))),
    MetricSpec("faultgate_receiver_rejected_log_records", "counter",
               "Log records rejected as invalid (not retried): malformed ids, undecodable or oversized requests.",
               ("transport", "reason"), "receive", values=(("transport", TRANSPORTS), ("reason", REJECTED_LOG_REASONS))),
    MetricSpec("faultgate_log_contents", "counter",
               "GenAI content records from log events, by what became of them: joined to their span, late (the "
               "run was decided), unjoined (the span never came), capped (over max_spans_per_trace), duplicate.",
               ("outcome",), "assemble", values=(("outcome", LOG_CONTENT_OUTCOMES),)),
    MetricSpec("faultgate_completion_scan_seconds", "histogram", "Time one completion scan took.",
               (), "assemble", (0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1)),
    MetricSpec("faultgate_late_spans", "counter", "Spans that arrived after their run's verdict; they carry it.",
               (), "assemble"),
    MetricSpec("faultgate_duplicate_spans", "counter", "Spans dropped as duplicates by (trace id, span id).",
               (), "assemble"),
    MetricSpec("faultgate_runs_evicted", "counter", "Runs closed early to make room (completion evicted).",
               (), "assemble"),
    MetricSpec("faultgate_runs_in_memory", "gauge", "Traces with runs in flight, read at scrape time.",
               (), "assemble"),
    MetricSpec("faultgate_spans_in_memory", "gauge", "Spans held for runs in flight, read at scrape time.",
               (), "assemble"),
    MetricSpec("faultgate_runs_in_memory_limit", "gauge",
               "The bound on traces with runs in flight (assemble.max_traces).", (), "assemble"),
    MetricSpec("faultgate_memory_held_bytes", "gauge", "Approximate bytes held for runs in flight.", (), "assemble"),
    MetricSpec("faultgate_decision_cache_traces", "gauge", "Decided traces the decision cache remembers.",
               (), "assemble"),
    MetricSpec("faultgate_decision_cache_bytes", "gauge",
               "Approximate bytes the decision cache holds (decided runs' and late spans' ids).", (), "assemble"),
    MetricSpec("faultgate_memory_limit_bytes", "gauge",
               "The bound on bytes held for runs in flight (assemble.max_bytes).", (), "assemble"),
    MetricSpec("faultgate_decision_cache_evictions", "counter",
               "Decided traces forgotten by the bounded decision cache.", (), "assemble"),
    MetricSpec("faultgate_verdict_amendments", "counter",
               "Amended verdicts (a late span or a judge changed a check's result; the run's verdict went out "
               "again with a revision), by check whose result changed and its new result.",
               ("agent", "check", "result"), "export/metrics", per_verdict=True),
    MetricSpec("faultgate_ruleset_agent_cache_evictions", "counter",
               "Agent names forgotten by the bounded cache of which checks bind each agent (cleared when full); "
               "rising: more distinct agent names than it holds, each matched against the bindings' globs again.",
               (), "verdict"),
    MetricSpec("faultgate_late_spans_unamendable", "counter",
               "Late spans whose run the amendment store no longer held (evicted: see "
               "faultgate_amend_store_evictions_total) or never held (not a run, or amend off): they carry "
               "the earlier verdict and amend nothing.", (), "verdict"),
    MetricSpec("faultgate_amend_store_evictions", "counter",
               "Decided runs the amendment store let go of, by the bound that made room (amend.max_runs, "
               "amend.max_bytes, amend.max_age, amend.max_run_spans).", ("reason",), "verdict",
               values=(("reason", AMEND_EVICTION_REASONS),), external=True),
    MetricSpec("faultgate_amend_store_runs", "gauge", "Decided runs kept so that late spans can amend them.",
               (), "verdict", external=True),
    MetricSpec("faultgate_amend_store_bytes", "gauge", "Approximate bytes the amendment store holds.",
               (), "verdict", external=True),
    MetricSpec("faultgate_judge_answers", "counter",
               "Judge questions answered about decided runs, by check and answer; each answer arrives as an "
               "amended verdict.", ("check", "result"), "judge"),
    MetricSpec("faultgate_judge_skipped", "counter",
               "Judge questions about decided runs that got no answer, by reason: over judge.per_minute "
               "(budget), judge.queue full (queue_full), no answer within judge.timeout (timeout), an error "
               "or unusable reply (error), the run left the amendment store first (evicted), shutdown, "
               "internal_error. The rule verdict stands; the question is not answered, never passed.",
               ("reason",), "judge", values=(("reason", JUDGE_SKIPPED_REASONS),)),
    MetricSpec("faultgate_judge_routed_runs", "counter",
               "Decided runs judge routing looked at, by route: all (judge.when: [all]), failed, undecided, drifted, "
               "sampled (a run in judge.sample's share of the rest), or skipped (not routed).", ("route",), "judge",
               values=(("route", JUDGE_ROUTES),)),
    MetricSpec("faultgate_judge_tokens", "counter",
               "Tokens sent to the judge (prompt tokens): as the endpoint reported them in its usage (reported), "
               "else estimated at 4 characters a token (estimated).", ("source",), "judge",
               values=(("source", ("reported", "estimated")),)),
    MetricSpec("faultgate_judge_queue_runs", "gauge", "Decided runs waiting for the judge.", (), "judge",
               external=True),
    MetricSpec("faultgate_exporter_sent_spans", "counter", "Spans the downstream accepted.", (), "export/spans",
               external=True),
    MetricSpec("faultgate_exporter_failed_spans", "counter",
               "Spans the downstream refused for good, or that could not be sent before retries or shutdown ended.",
               ("reason",), "export/spans", values=(("reason", EXPORT_FAILED_REASONS),), external=True),
    MetricSpec("faultgate_exporter_filtered_spans", "counter",
               "Spans not forwarded by configuration (verdict_only mode forwards roots only).", (), "export/spans",
               external=True),
    MetricSpec("faultgate_exporter_queue_spans", "gauge",
               "Spans accepted and not yet exported: queued, being sent, or roots waiting for their verdict.",
               (), "export/spans", external=True),
    MetricSpec("faultgate_exporter_queue_capacity_spans", "gauge",
               "The bound on spans accepted and not yet exported (export.queue_spans).", (), "export/spans",
               external=True),
    MetricSpec("faultgate_exporter_held_spans", "gauge", "Root spans waiting for their run's verdict.",
               (), "export/spans"),
    MetricSpec("faultgate_exporter_annex_cache_evictions", "counter",
               "Encoded pieces of root annotations (a summary, scenario, fired check's reason or evaluation event) "
               "forgotten by the bounded table span export keeps them in, cleared when full; rising: more distinct "
               "pieces than it holds, each encoded again.", (), "export/spans", external=True),
    MetricSpec("faultgate_exporter_verdict_cache_evictions", "counter",
               "Verdicts forgotten by the bounded cache that late roots are annotated from.", (), "export/spans",
               external=True),
    MetricSpec("faultgate_exporter_evaluation_key_cache_evictions", "counter",
               "Evaluation keys (a verdict's rule digests and evaluators, where its results name an evaluator) "
               "forgotten by the bounded cache the span annotation keeps them in; rising: more kinds of verdict "
               "than it holds, each key built again.", (), "export/spans", external=True),
    MetricSpec("faultgate_exporter_sent_log_records", "counter", "Evaluation log records the downstream accepted.",
               (), "export/spans"),
    MetricSpec("faultgate_exporter_failed_log_records", "counter", "Evaluation log records not delivered.",
               ("reason",), "export/spans", values=(("reason", EXPORT_FAILED_REASONS),)),
    MetricSpec("faultgate_stream_dropped_verdicts", "counter",
               "Verdicts not delivered to one slow verdict-stream subscriber (its queue was full).",
               ("reason",), "export/stream", external=True,
               values=(("reason", ("queue_full",)),)),
    MetricSpec("faultgate_query_verdicts", "gauge",
               "Verdicts the verdict API's ring holds (/api/v1: the latest revision of each run).", (),
               "export/query", external=True),
    MetricSpec("faultgate_query_max_verdicts", "gauge", "The verdict API ring's bound (query.max_verdicts).", (),
               "export/query", external=True),
    MetricSpec("faultgate_query_bytes", "gauge", "Approximate bytes the verdict API's ring holds.", (),
               "export/query", external=True),
    MetricSpec("faultgate_query_max_bytes", "gauge", "The verdict API ring's byte bound (query.max_bytes).", (),
               "export/query", external=True),
    MetricSpec("faultgate_query_evicted_verdicts", "counter",
               "Verdicts the verdict API's ring let go of to make room, by the bound (query.max_verdicts, "
               "query.max_bytes).", ("reason",), "export/query", external=True,
               values=(("reason", ("max_verdicts", "max_bytes")),)),
    MetricSpec("faultgate_shadow_check_fired", "counter",
               "Runs on which a shadow check (a binding's shadow policy or spec) fired; never part of a verdict.",
               ("agent", "check"), "export/metrics", per_verdict=True),
    MetricSpec("faultgate_gate_verdict", "gauge",
               "Live gate per agent and version against its band, one-hot: verdict is pass, fail or inconclusive.",
               ("agent", "version", "verdict"), "gate", external=True),
    MetricSpec("faultgate_gate_clean_rate", "gauge",
               "Clean share of the window's decided runs (undecided ones left out); NaN while the window is empty.",
               ("agent", "version"), "gate", external=True),
    MetricSpec("faultgate_gate_band_min", "gauge", "The band's lowest baseline clean rate.", ("agent", "version"),
               "gate", external=True),
    MetricSpec("faultgate_gate_band_max", "gauge", "The band's highest baseline clean rate.", ("agent", "version"),
               "gate", external=True),
    MetricSpec("faultgate_gate_pass_threshold", "gauge", "PASS at or above this clean rate (band min - 1/n).",
               ("agent", "version"), "gate", external=True),
    MetricSpec("faultgate_gate_fail_threshold", "gauge", "FAIL below this clean rate (band min - 3/n).",
               ("agent", "version"), "gate", external=True),
    MetricSpec("faultgate_gate_p_value", "gauge",
               "One-sided p-value of the drop from the baseline mean; NaN while the window is empty.",
               ("agent", "version"), "gate", external=True),
    MetricSpec("faultgate_gate_required_n", "gauge",
               "Runs needed to tell the drop from noise (alpha 0.05, power 0.80); NaN unless INCONCLUSIVE.",
               ("agent", "version"), "gate", external=True),
    MetricSpec("faultgate_gate_window_runs", "gauge", "Decided runs in the window (at most gate.window).",
               ("agent", "version"), "gate", external=True),
    MetricSpec("faultgate_gate_undecided_runs", "counter",
               "Runs the checks could not judge, counted apart and never in the clean rate.",
               ("agent", "version"), "gate", external=True),
    MetricSpec("faultgate_gate_windows_folded", "counter",
               "Runs past the window bound: a version past gate.max_versions went to version 'other', an agent "
               "past gate.max_agents was not gated.", (), "gate", external=True),
    MetricSpec("faultgate_gate_amendments_missed", "counter",
               "Amended verdicts whose run had already rolled out of its window (or was never gated): the "
               "window keeps the outcome it had.", (), "gate", external=True),
    MetricSpec("faultgate_gate_luck_rate", "gauge",
               "Luck Rate: passing runs whose path was not clean over passing runs (from faultgate_outcome_runs).",
               ("agent",), "gate", external=True),
    MetricSpec("faultgate_shadow_gate_verdict", "gauge",
               "The gate as it would be with the shadow rules enforced, one-hot over pass, fail, inconclusive.",
               ("agent", "version", "verdict"), "gate", external=True),
    MetricSpec("faultgate_shadow_gate_clean_rate", "gauge", "The window's clean rate under the shadow rules.",
               ("agent", "version"), "gate", external=True),
    MetricSpec("faultgate_drift_verdict", "gauge",
               "Trajectory drift per agent and version against the band's baseline shapes, one-hot: verdict is "
               "pass, drift or inconclusive (gate/drift.py).", ("agent", "version", "verdict"), "gate",
               external=True),
    MetricSpec("faultgate_drift_p_value", "gauge",
               "Chi-square homogeneity p-value of one shape dimension, window against baseline; NaN where the "
               "dimension was not tested.", ("agent", "version", "dimension"), "gate", external=True),
    MetricSpec("faultgate_drift_threshold", "gauge",
               "The p-value below which a dimension drifted: gate.drift.alpha over the dimensions tested.",
               ("agent", "version"), "gate", external=True),
    MetricSpec("faultgate_drift_distance", "gauge",
               "Total variation distance between the window's and the baseline's shares of a dimension's "
               "categories (0: the same, 1: disjoint); NaN where not tested.", ("agent", "version", "dimension"),
               "gate", external=True),
    MetricSpec("faultgate_drift_share_change", "gauge",
               "Window share minus baseline share of the categories that moved most (3 per dimension).",
               ("agent", "version", "dimension", "category"), "gate", external=True),
    MetricSpec("faultgate_drift_window_runs", "gauge", "Runs whose shapes the drift window holds.",
               ("agent", "version"), "gate", external=True),
    MetricSpec("faultgate_drift_baseline_runs", "gauge", "Baseline runs the window is compared with.",
               ("agent", "version"), "gate", external=True),
    MetricSpec("faultgate_session_verdicts", "counter",
               "Sessions decided, by verdict (clean/failed/undecided) and how they ended (ended, idle, "
               "max-runs, evicted, shutdown).", ("agent", "verdict", "end"), "export/metrics", per_verdict=True),
    MetricSpec("faultgate_session_check_fired", "counter", "Sessions on which a session check fired.",
               ("agent", "check"), "export/metrics", per_verdict=True),
    MetricSpec("faultgate_sessions_open", "gauge", "Sessions open (runs filed, not yet decided).", (), "sessions",
               external=True),
    MetricSpec("faultgate_session_runs_held", "gauge", "Runs the open sessions hold.", (), "sessions",
               external=True),
    MetricSpec("faultgate_session_budget_agents", "gauge",
               "Agents whose session totals the per-agent budgets keep (at most sessions.max_agents).", (),
               "sessions", external=True),
    MetricSpec("faultgate_sessions_closed_early", "counter",
               "Sessions decided before they ended: the open sessions were at sessions.max_sessions "
               "(max_sessions: the one idle longest went), or one reached sessions.max_runs_per_session "
               "(max_runs).", ("reason",), "sessions", external=True),
    MetricSpec("faultgate_session_runs_without_id", "counter",
               "Runs with no session.id or gen_ai.conversation.id: in no session.", (), "sessions", external=True),
    MetricSpec("faultgate_session_late_amendments", "counter",
               "Amended run verdicts whose session was already decided: the session verdict stands.", (),
               "sessions", external=True),
    MetricSpec("faultgate_session_agents_evicted", "counter",
               "Agents dropped from the per-agent budgets' store at sessions.max_agents (their totals restart).",
               (), "sessions", external=True),
    MetricSpec("faultgate_session_agent_events_evicted", "counter",
               "Session totals dropped from an agent's budget window at sessions.max_events_per_agent (the agent's "
               "total undercounts).", (), "sessions", external=True),
    MetricSpec("faultgate_loop_waste_steps", "counter",
               "Tool calls spent inside loops (the loop check's calls after the loop's first), at the verdict.",
               ("agent",), "export/metrics", per_verdict=True),
    MetricSpec("faultgate_loop_waste_seconds", "counter",
               "Seconds spent inside loops (first wasted call's start to the last one's end), where recorded.",
               ("agent",), "export/metrics", per_verdict=True),
    MetricSpec("faultgate_loop_waste_tokens", "counter",
               "Tokens (gen_ai.usage.input_tokens + output_tokens) of the spans inside loops, where recorded.",
               ("agent",), "export/metrics", per_verdict=True),
    MetricSpec("faultgate_loop_waste_cost_usd", "counter",
               "Cost (faultgate.cost_usd) of the spans inside loops, where recorded.", ("agent",), "export/metrics",
               per_verdict=True),
    MetricSpec("faultgate_window_keys", "gauge",
               "Keys (binding, budget, session or agent, argument value) the windowed-budget store holds.",
               (), "checks", external=True),
    MetricSpec("faultgate_window_events", "gauge", "Timed events the windowed-budget store holds, over every key.",
               (), "checks", external=True),
    MetricSpec("faultgate_window_max_keys", "gauge", "The bound on the store's keys (checks.windows.max_keys).",
               (), "checks", external=True),
    MetricSpec("faultgate_window_evicted_keys", "counter",
               "Keys dropped whole (least recently used) because the store held checks.windows.max_keys: their "
               "budgets undercount from then on.", (), "checks", external=True),
    MetricSpec("faultgate_window_evicted_events", "counter",
               "Events dropped before their window ended: with an evicted key, or a key's oldest past "
               "checks.windows.max_events_per_key.", (), "checks", external=True),
    MetricSpec("faultgate_window_expired_events", "counter",
               "Events dropped because they fell out of their budget's window (not a bound).", (), "checks",
               external=True),
    MetricSpec("faultgate_check_errors", "counter",
               "Checks that raised on a run (a bug), or plug-ins that returned something that is not a result: "
               "that run got an undecided result for the check, the others went on.", ("check",), "verdict"),
    MetricSpec("faultgate_check_overruns", "counter",
               "Plug-in runs past a limit (checks.isolation): over the CPU budget on a run (cpu), a call that "
               "did not return within the deadline (deadline), or one that held the GIL, stalling every thread, "
               "for 0.2 s or more (gil: switched off at once). Each gave an undecided result.",
               ("check", "limit"), "checks/plugins", external=True),
    MetricSpec("faultgate_check_switched_off", "counter",
               "Plug-ins switched off for overrunning checks.isolation.max_overruns times in a row; their results "
               "are undecided until a reload builds them again.", ("check",), "checks/plugins", external=True),
    MetricSpec("faultgate_checks_off", "gauge", "1 while a plug-in is switched off, else 0.", ("check",),
               "checks/plugins", external=True),
    MetricSpec("faultgate_check_cpu_seconds", "counter",
               "CPU seconds each plug-in took (at most; a call's wall time bounds it where it stayed under the "
               "budget).", ("check",), "checks/plugins", external=True),
    MetricSpec("faultgate_plugin_queue", "gauge",
               "Runs and span batches waiting for the plug-ins' thread.", (), "checks/plugins", external=True),
    MetricSpec("faultgate_plugin_queue_full", "counter",
               "Work the plug-ins' thread could not take (checks.isolation.max_queue): a verdict that went out "
               "with its plug-ins' results undecided, or spans not observed (early findings missed).",
               ("work",), "checks/plugins", external=True),
    MetricSpec("faultgate_internal_errors", "counter",
               "Internal errors caught where they would have stopped a stage (a bug, logged with its class), "
               "whatever the answer they led to (a request refused retryably, a span failed, a verdict undecided); "
               "the stage went on.", ("stage",), "assemble"),
    MetricSpec("faultgate_thread_deaths", "counter",
               "Background threads that stopped on an error; readiness (/readyz) stays down after one.",
               ("thread",), "model"),
    MetricSpec("faultgate_label_values_folded", "counter",
               "Label values folded into 'other' because the label hit its cap.", ("label",), "export/metrics"),
    MetricSpec("faultgate_label_values_shortened", "counter",
               "Label values cut to metrics.max_label_length (a hash of the whole kept), by label.",
               ("label",), "export/metrics"),
    MetricSpec("faultgate_http_refused_connections", "counter",
               "HTTP connections answered 503 and closed because receive.http_max_connections were open, "
               "by site (http: the OTLP receiver; metrics: /metrics and the probes).", ("site",), "receive",
               values=(("site", ("http", "metrics")),)),
    MetricSpec("faultgate_kafka_messages", "counter",
               "Kafka messages read, by outcome: taken (spans handed on), rejected (undecodable or oversized; "
               "settled), refused (a bound was reached; read again after a pause).", ("outcome",), "receive/kafka"),
    MetricSpec("faultgate_kafka_commits", "counter",
               "Offset commits (each also records the read lease), by result.", ("result",), "receive/kafka"),
    MetricSpec("faultgate_kafka_replayed_messages", "counter",
               "Messages re-read below the lease an earlier owner left: their runs may have had verdicts before.",
               (), "receive/kafka"),
    MetricSpec("faultgate_kafka_replayed_verdicts", "counter",
               "Verdicts of runs re-read after a crash or handover: the downstream may hold them already "
               "(idempotent by run key); an upper bound on duplicates.", (), "receive/kafka"),
    MetricSpec("faultgate_kafka_handed_over_traces", "counter",
               "Traces with runs in flight dropped without a verdict when their partition moved; "
               "the new owner re-reads them.", (), "receive/kafka"),
    MetricSpec("faultgate_kafka_handed_over_spans", "counter",
               "Spans of handed-over traces dropped from memory (held roots among them are counted in "
               "faultgate_exporter_failed_spans_total{reason=\"handed_over\"}).", (), "receive/kafka"),
    MetricSpec("faultgate_kafka_pauses", "counter",
               "Times every partition was paused instead of refusing, by the bound that was reached.",
               ("reason",), "receive/kafka"),
    MetricSpec("faultgate_kafka_unkeyed_messages", "counter",
               "Messages without a key: the producer does not partition by trace id, so a trace may be split "
               "across replicas.", (), "receive/kafka"),
    MetricSpec("faultgate_kafka_partition_events", "counter", "Partitions assigned, revoked or lost.",
               ("event",), "receive/kafka"),
    MetricSpec("faultgate_kafka_errors", "counter", "Errors the Kafka client reported, by librdkafka error name.",
               ("kind",), "receive/kafka"),
    MetricSpec("faultgate_kafka_pending_messages", "gauge",
               "Messages read whose runs are not yet decided and exported (not committable yet).",
               (), "receive/kafka"),
    MetricSpec("faultgate_kafka_partitions", "gauge", "Partitions this replica owns.", (), "receive/kafka"),
    MetricSpec("faultgate_wal_appended_bytes", "counter",
               "Bytes written to the write-ahead log (requests as received, plus record headers).", (), "receive/wal"),
    MetricSpec("faultgate_wal_fsync_seconds", "histogram",
               "Time an fsync of the write-ahead log took (one per group commit with fsync: batch).", (),
               "receive/wal", FSYNC_SECONDS),
    MetricSpec("faultgate_wal_errors", "counter",
               "Disk operations of the write-ahead log that failed (requests meanwhile refused retryably, reason "
               "wal_error).", ("op",), "receive/wal", values=(("op", WAL_OPERATIONS),)),
    MetricSpec("faultgate_wal_cut_tails", "counter",
               "Segments cut at start at a torn or corrupt record (a write the crash interrupted, or damage).", (),
               "receive/wal"),
    MetricSpec("faultgate_wal_cut_bytes", "counter", "Bytes cut from segments at start (torn or corrupt tails).",
               (), "receive/wal"),
    MetricSpec("faultgate_wal_replayed_requests", "counter",
               "Requests read back from the write-ahead log at start and handed on again (their spans count as "
               "accepted over transport wal).", (), "receive/wal"),
    MetricSpec("faultgate_wal_replayed_verdicts", "counter",
               "First verdicts of runs with spans replayed from the write-ahead log: a downstream may hold them "
               "already (idempotent by run key); an upper bound on duplicates.", (), "receive/wal"),
    MetricSpec("faultgate_wal_bytes", "gauge", "Bytes the write-ahead log's segments take on disk.", (),
               "receive/wal"),
    MetricSpec("faultgate_wal_max_bytes", "gauge",
               "durability.wal.max_bytes: past it, requests are refused retryably (reason wal_full).", (),
               "receive/wal"),
    MetricSpec("faultgate_wal_segments", "gauge", "Segment files of the write-ahead log.", (), "receive/wal"),
    MetricSpec("faultgate_wal_pending_requests", "gauge",
               "Logged requests whose runs are not yet decided and exported (not covered by a checkpoint yet).", (),
               "receive/wal"),
    MetricSpec("faultgate_wal_recovery_seconds", "gauge",
               "How long the last start took to open the write-ahead log and replay what it held.", (),
               "receive/wal"),
    MetricSpec("faultgate_build_info", "gauge", "Always 1; the running build's version and Python.",
               ("version", "python"), "service"),
    MetricSpec("faultgate_gc_pause_seconds", "counter",
               "Seconds the garbage collector held the process (wall clock), by generation (2: a full collection).",
               ("generation",), "export/metrics", external=True),
    MetricSpec("faultgate_gc_collections", "counter", "Garbage collections, by generation (2: a full collection).",
               ("generation",), "export/metrics", external=True),
)


class Telemetry:
    """The recorded metrics of one service, on one registry.

    ``root_grace`` draws the verdict-delay buckets around the service's own grace. Every
    counter whose labels all have known values starts at zero for each combination.
    """

    def __init__(self, registry: CollectorRegistry | None = None, *,
                 root_grace: float = DEFAULT_ROOT_GRACE_S) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.metrics: dict[str, Counter | Histogram | CounterSeries | HistogramSeries] = {}
        for spec in CATALOG:
            if spec.external:
                continue
            if spec.per_verdict:
                if spec.kind == "counter":
                    self.metrics[spec.name] = CounterSeries(spec.name, spec.help, spec.labels, self.registry)
                else:
                    buckets = (delay_buckets(root_grace) if spec.name == "faultgate_verdict_delay_seconds"
                               else spec.buckets)
                    self.metrics[spec.name] = HistogramSeries(spec.name, spec.help, spec.labels, self.registry,
                                                              buckets)
                if spec.kind == "counter" and spec.labels and all(label in spec.known for label in spec.labels):
                    for combination in itertools.product(*(spec.known[label] for label in spec.labels)):
                        self.metrics[spec.name].labels(*combination)
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
            # gauges are read at scrape time by a collector the owning stage registers

    def __getitem__(self, name: str) -> Counter | Histogram | CounterSeries | HistogramSeries:
        return self.metrics[name]


def describe(name: str) -> str:
    """The help text of a declared metric, for collectors that build families at scrape time."""
    return next(s.help for s in CATALOG if s.name == name)


def reference_markdown() -> str:
    rows = ["# Metrics", "", "Generated from `faultgate_stream/model/telemetry.py` (`CATALOG`); do not edit.", "",
            "Metrics are per replica: dashboards and alert rules `sum()` them across replicas. Beside these, the",
            "service registry carries prometheus_client's process and platform collectors (`process_*`,",
            "`python_info`).", "",
            "| name | type | labels | recorded by | meaning |", "|---|---|---|---|---|"]
    for s in CATALOG:
        rows.append(f"| `{exposed_name(s)}` | {s.kind} | {', '.join(f'`{x}`' for x in s.labels) or '-'} | {s.owner} "
                    f"| {s.help} |")
    rows += ["", "## Label values known in advance", "",
             "Counters whose every label is listed here exist at zero from the start, one series per combination.",
             "", "| metric | label | values |", "|---|---|---|"]
    for s in CATALOG:
        for label, values in s.values:
            rows.append(f"| `{exposed_name(s)}` | `{label}` | {', '.join(f'`{v}`' for v in values)} |")
    rows += ["", "## Buckets", "", "| histogram | buckets |", "|---|---|"]
    for s in CATALOG:
        if s.kind == "histogram":
            buckets = DELAY_SECONDS if s.name == "faultgate_verdict_delay_seconds" else s.buckets
            note = f" (for root_grace {DEFAULT_ROOT_GRACE_S:g} s; drawn around the configured one)" \
                if s.name == "faultgate_verdict_delay_seconds" else ""
            rows.append(f"| `{s.name}` | {', '.join(f'{b:g}' for b in buckets)}{note} |")
    return "\n".join(rows) + "\n"


def exposed_name(spec: MetricSpec) -> str:
    """The family name as scraped: a Counter gains ``_total``."""
    return spec.name + ("_total" if spec.kind == "counter" else "")


if __name__ == "__main__":
    sys.stdout.write(reference_markdown())
