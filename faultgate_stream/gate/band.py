"""faultgate 0.4.1's ``band.json``: read, written and built from baseline runs.

Fields, in faultgate's order: ``judge``, ``checks``, ``runs``, ``n`` (scenarios),
``scenarios``, ``clean_rate`` (``min``, ``max``, ``mean``, ``per_run``),
``clean_in_all_runs``, ``usage`` (mean ``tokens``, ``latency_ms``, ``cost_usd`` per run,
null where no trace carried it) and ``rule`` (the gate's rule in words). A band written
here is read by faultgate and the other way round.

After faultgate's keys, ours: ``trajectories``, the baseline runs' shapes per agent and
version (``gate/drift.py``), for the drift test. faultgate 0.4.1 reads a band by key
(its ``band.py``), so the extra key is ignored there; a band without it (faultgate's)
gates as before and reports drift INCONCLUSIVE.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faultgate_stream.gate.drift import Trajectories

from faultgate_stream.gate.runs import CLEAN, FAILED, MEASURES, GateRun
from faultgate_stream.gate.stats import ALPHA, POWER
from faultgate_stream.model.errors import InputError

RULE = (f"PASS if clean_rate >= min - 1/n; FAIL if clean_rate < min - 3/n or the drop from the baseline mean is "
        f"significant (one-sided, alpha {ALPHA}); else INCONCLUSIVE with the n needed for power {POWER}")
# Fewer baseline runs than this measure run-to-run variance poorly (faultgate warns too).
STABLE_RUNS = 3


@dataclass(frozen=True)
class Band:
    judge: str
    checks: tuple[str, ...]
    runs: int
    n: int
    scenarios: tuple[str, ...]
    min: float
    max: float
    mean: float
    per_run: tuple[float, ...]
    clean_in_all_runs: tuple[str, ...]
    usage: dict[str, float | None]
    rule: str = RULE
    trajectories: Trajectories | None = None

    def to_json(self) -> dict[str, Any]:
        return {"judge": self.judge, "checks": list(self.checks), "runs": self.runs, "n": self.n,
                "scenarios": list(self.scenarios),
                "clean_rate": {"min": self.min, "max": self.max, "mean": self.mean, "per_run": list(self.per_run)},
                "clean_in_all_runs": list(self.clean_in_all_runs), "usage": dict(self.usage), "rule": self.rule,
                **({"trajectories": self.trajectories.to_json()} if self.trajectories else {})}

    def dump(self) -> str:
        return json.dumps(self.to_json(), indent=1)

    @classmethod
    def from_json(cls, doc: Any, where: str = "band") -> "Band":
        """Raises ``InputError`` naming the first field at fault."""
        if not isinstance(doc, dict):
            raise InputError(f"{where}: expected a JSON object")
        cr = doc.get("clean_rate")
        if not isinstance(cr, dict):
            raise InputError(f"{where}: clean_rate: expected an object with min, max, mean, per_run")
        try:
            per_run = tuple(float(x) for x in cr.get("per_run") or ())
            runs = int(doc.get("runs", len(per_run)))
            n = int(doc["n"])
            lo, hi = float(cr["min"]), float(cr["max"])
            mean = float(cr.get("mean", sum(per_run) / len(per_run) if per_run else lo))
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(f"{where}: n, runs and clean_rate.min/max/mean/per_run must be numbers ({e})") from None
        if n <= 0 or runs <= 0:
            raise InputError(f"{where}: n and runs must be positive")
        if not all(0.0 <= x <= 1.0 for x in (lo, hi, mean, *per_run)):
            raise InputError(f"{where}: clean rates must lie in [0, 1]")
        usage = doc.get("usage") or {}
        if not isinstance(usage, dict):
            raise InputError(f"{where}: usage: expected an object")
        return cls(judge=str(doc.get("judge", "none")), checks=tuple(str(c) for c in doc.get("checks") or ()),
                   runs=runs, n=n, scenarios=tuple(str(s) for s in doc.get("scenarios") or ()),
                   min=lo, max=hi, mean=mean, per_run=per_run,
                   clean_in_all_runs=tuple(str(s) for s in doc.get("clean_in_all_runs") or ()),
                   usage={k: _number(usage.get(k)) for k in MEASURES}, rule=str(doc.get("rule", RULE)),
                   trajectories=(Trajectories.from_json(doc["trajectories"], f"{where}: trajectories")
                                 if doc.get("trajectories") is not None else None))

    @classmethod
    def load(cls, path: str | Path) -> "Band":
        try:
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as e:
            raise InputError(f"{path}: cannot read ({e.strerror or e})") from None
        except json.JSONDecodeError as e:
            raise InputError(f"{path}: not valid JSON ({e})") from None
        return cls.from_json(doc, str(path))


def run_clean_rate(runs: list[GateRun]) -> float | None:
    """Clean share of the decided runs; undecided ones are left out, never counted clean."""
    decided = [r for r in runs if r.outcome in (CLEAN, FAILED)]
    return sum(r.outcome == CLEAN for r in decided) / len(decided) if decided else None


def build(baseline: list[list[GateRun]], checks: list[str], judge: str = "none",
          trajectories: Trajectories | None = None) -> Band:
    """The band of two or more baseline runs (each a list of its traces' runs), with the
    baseline's ``trajectories`` when they were counted."""
    if len(baseline) < 2:
        raise InputError("a band needs at least 2 baseline runs (3 or more measure noise well)")
    per_run = []
    for i, runs in enumerate(baseline):
        rate = run_clean_rate(runs)
        if rate is None:
            raise InputError(f"baseline run {i + 1}: no run could be judged clean or failed")
        per_run.append(rate)
    scenarios = sorted({r.scenario for runs in baseline for r in runs})
    clean_sets = []
    for runs in baseline:
        by: dict[str, list[str]] = {}
        for r in runs:
            by.setdefault(r.scenario, []).append(r.outcome)
        clean_sets.append({s for s, outs in by.items() if all(o == CLEAN for o in outs)})
    clean_all = [s for s in scenarios if all(s in c for c in clean_sets)]
    usage: dict[str, float | None] = {}
    for m in MEASURES:
        means = [sum(vals) / len(vals) for runs in baseline
                 if (vals := [r.measures[m] for r in runs if r.measures.get(m) is not None])]
        usage[m] = sum(means) / len(means) if means else None
    return Band(judge=judge, checks=tuple(checks), runs=len(baseline), n=len(scenarios), scenarios=tuple(scenarios),
                min=min(per_run), max=max(per_run), mean=sum(per_run) / len(per_run), per_run=tuple(per_run),
                clean_in_all_runs=tuple(clean_all), usage=usage, trajectories=trajectories or None)


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
