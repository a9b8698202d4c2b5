"""What the gate reads of a run verdict: its scenario, its outcome, whether the policy
fired (a hard block) and its usage. Built once per verdict, offline and live alike."""
from __future__ import annotations

from typing import NamedTuple

from faultgate_stream.model.verdict import CLEAN, FAILED, UNDECIDED, CheckResult, RunVerdict, verdict_of

POLICY = "policy"
MEASURES = ("tokens", "latency_ms", "cost_usd")


class GateRun(NamedTuple):
    scenario: str
    trace_id: str
    outcome: str               # clean | failed | undecided
    policy_fired: bool
    measures: dict[str, float | None]


def outcome_of(verdict: RunVerdict) -> str:
    """The run's verdict as the gate counts it: clean, failed, or anything else, which is
    undecided (a run the checks could not judge never enters a clean rate)."""
    value = getattr(verdict, "verdict", None)
    if value is None:
        return CLEAN if verdict.clean else FAILED
    value = getattr(value, "value", value)
    return value if value in (CLEAN, FAILED) else UNDECIDED


def gate_run(verdict: RunVerdict) -> GateRun:
    return GateRun(verdict.scenario, verdict.key.trace_id, outcome_of(verdict), _policy_fired(verdict.results),
                   verdict.measures)


def shadow_run(verdict: RunVerdict, shadow: tuple[CheckResult, ...]) -> GateRun:
    """The run as its verdict would be with the shadow rules enforced: the shadow's results
    replace the active results of the same check name."""
    replaced = {r.check for r in shadow}
    results = tuple(r for r in verdict.results if r.check not in replaced) + shadow
    outcome = verdict_of(any(r.fired for r in results), any(getattr(r, "undecided", False) for r in results))
    return GateRun(verdict.scenario, verdict.key.trace_id, outcome, _policy_fired(results), verdict.measures)


def _policy_fired(results: tuple[CheckResult, ...]) -> bool:
    return any(r.fired and r.check == POLICY for r in results)
