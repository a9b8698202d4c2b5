"""A candidate against its band: PASS / FAIL / INCONCLUSIVE, with faultgate's numbers.

| verdict       | rule (n = scenarios in the band)                                          |
|---------------|---------------------------------------------------------------------------|
| PASS          | clean rate >= min - 1/n                                                   |
| FAIL          | clean rate < min - 3/n, or below PASS and the drop is significant (alpha) |
| INCONCLUSIVE  | in between and not significant; ``required_n`` sizes the fix (power)      |

Any policy violation FAILs whatever the clean rate (the hard block: noise explains a flaky
answer, not a refund over the limit). Undecided runs are counted apart and never enter
the clean rate; with no decided run at all the gate cannot say more than INCONCLUSIVE.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from faultgate_stream.gate.band import STABLE_RUNS, Band
from faultgate_stream.gate.runs import CLEAN, FAILED, MEASURES, GateRun
from faultgate_stream.gate.stats import ALPHA, POWER, drop_p_value, required_n, sample_variance

PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"
VERDICTS = (PASS, FAIL, INCONCLUSIVE)


@dataclass(frozen=True)
class GateResult:
    verdict: str
    clean_rate: float | None
    band: Band
    pass_threshold: float
    fail_threshold: float
    drop: float | None
    p_value: float | None
    required_n: int | None
    additional_n: int | None
    decided: int
    undecided: int = 0
    usage: dict[str, dict[str, float | None]] = field(default_factory=dict)
    regressions: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    policy_violations: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """faultgate's ``gate`` object; ``undecided`` only when there were such runs."""
        out: dict[str, Any] = {
            "verdict": self.verdict, "clean_rate": self.clean_rate, "usage": self.usage,
            "band": [self.band.min, self.band.max],
            "pass_threshold": self.pass_threshold, "fail_threshold": self.fail_threshold,
            "stats": {"baseline_mean": self.band.mean, "drop": self.drop, "p_value": self.p_value,
                      "alpha": ALPHA, "power": POWER, "required_n": self.required_n,
                      "additional_n": self.additional_n},
            "regressions": list(self.regressions), "missing": list(self.missing),
            "policy_violations": list(self.policy_violations), "warnings": list(self.warnings),
        }
        if self.undecided:
            out["undecided"] = self.undecided
        return out


def thresholds(band: Band) -> tuple[float, float]:
    """(pass, fail): one and three scenarios' worth below the lowest baseline run."""
    return band.min - 1 / band.n, band.min - 3 / band.n


@dataclass(frozen=True)
class Judgement:
    """The verdict and the numbers behind it, from counts alone (what the live gate keeps)."""

    verdict: str
    clean_rate: float | None
    pass_threshold: float
    fail_threshold: float
    drop: float | None = None
    p_value: float | None = None
    required_n: int | None = None
    additional_n: int | None = None


def judge(band: Band, clean: int, decided: int, policy_violated: bool) -> Judgement:
    pass_t, fail_t = thresholds(band)
    if not decided:
        return Judgement(FAIL if policy_violated else INCONCLUSIVE, None, pass_t, fail_t)
    rate = clean / decided
    drop = band.mean - rate
    p = drop_p_value(rate, decided, band.mean, band.n * band.runs, sample_variance(list(band.per_run)))
    if rate >= pass_t:
        verdict = PASS
    elif rate < fail_t or p < ALPHA:
        verdict = FAIL
    else:
        verdict = INCONCLUSIVE
    if policy_violated:
        verdict = FAIL
    need = more = None
    if verdict == INCONCLUSIVE:
        need = required_n(band.mean, rate)
        more = None if need is None else max(0, need - decided)
    return Judgement(verdict, rate, pass_t, fail_t, drop, p, need, more)


def decide(band: Band, runs: list[GateRun], checks: list[str] | None = None, judge_name: str = "none") -> GateResult:
    """``checks``: the check names the candidate ran, to warn when they differ from the band's."""
    decided = [r for r in runs if r.outcome in (CLEAN, FAILED)]
    policy = tuple(dict.fromkeys(r.trace_id for r in runs if r.policy_fired))
    j = judge(band, sum(r.outcome == CLEAN for r in decided), len(decided), bool(policy))
    return GateResult(verdict=j.verdict, clean_rate=j.clean_rate, band=band, pass_threshold=j.pass_threshold,
                      fail_threshold=j.fail_threshold, drop=j.drop, p_value=j.p_value, required_n=j.required_n,
                      additional_n=j.additional_n, decided=len(decided), undecided=len(runs) - len(decided),
                      usage=usage_change(band, runs), regressions=regressions(band, runs), missing=missing(band, runs),
                      policy_violations=policy, warnings=warnings(band, checks, judge_name))


def regressions(band: Band, runs: list[GateRun]) -> tuple[str, ...]:
    """Scenarios clean in every baseline run and failed now: the ones to read first."""
    failed = {r.scenario for r in runs if r.outcome == FAILED}
    return tuple(s for s in band.clean_in_all_runs if s in failed)


def missing(band: Band, runs: list[GateRun]) -> tuple[str, ...]:
    seen = {r.scenario for r in runs}
    return tuple(s for s in band.scenarios if s not in seen)


def usage_change(band: Band, runs: list[GateRun]) -> dict[str, dict[str, float | None]]:
    """Mean tokens / latency / cost against the band's, where both sides carry them."""
    out: dict[str, dict[str, float | None]] = {}
    for m in MEASURES:
        base = band.usage.get(m)
        vals = [r.measures[m] for r in runs if r.measures.get(m) is not None]
        if base is None or not vals:
            continue
        cand = sum(vals) / len(vals)
        out[m] = {"baseline": base, "candidate": cand,
                  "delta_pct": round((cand - base) / base * 100, 1) if base else None}
    return out


def warnings(band: Band, checks: list[str] | None, judge: str = "none") -> tuple[str, ...]:
    out = []
    if checks is not None and (list(band.checks) != list(checks) or band.judge != judge):
        out.append(f"band was built with judge={band.judge} checks={list(band.checks)!r}; "
                   f"this run used judge={judge} checks={list(checks)!r}")
    if band.runs < STABLE_RUNS:
        out.append(f"band built from {band.runs} baseline runs; use {STABLE_RUNS} or more for a stable noise estimate")
    return tuple(out)
