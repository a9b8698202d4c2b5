"""The offline JSON report: faultgate's fields, so its consumers keep working, plus ours.

faultgate's: ``judge``, ``checks``, ``redaction``, ``traces``, ``failed_traces``,
``fired``, ``measures`` and ``results`` as ``{trace_id, scenario, check, detected,
confidence, reason}``. Ours, added to each result: ``run_id``, ``completion``, ``steps``,
``severity``; and a ``runs`` list with one entry per run, each with its ``verdict``
(clean / failed / undecided) and the ``undecided`` checks. A check that could not see its
input (content not captured) has ``detected: null``: faultgate's field keeps its meaning
("the check found its failure"), and null says the check could not tell. Every reason and
scenario key is masked by the redactor before it is written.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from faultgate_stream import __version__
from faultgate_stream.model.reason import Reason
from faultgate_stream.model.verdict import CLEAN, UNDECIDED, RunVerdict, Severity, verdict_of
from faultgate_stream.verdict.redact import safe_key

Redact = Callable[[str], str]


# Not a dataclass: ``check`` runs without importing ``dataclasses`` (tests/cli/test_startup.py).
class Report(NamedTuple):
    checks: list[str]
    verdicts: list[RunVerdict]
    redaction: str = "builtin"
    judge: str = "none"  # the judge's name when judge checks ran (``check --judge``)
    # Each run's spans as rows (``verdict/timeline.py``), by run id, for the HTML report
    # (``check --html``); empty otherwise. Read-only: the default is shared.
    timelines: Mapping[str, tuple[Any, ...]] = {}

    @property
    def trace_ids(self) -> list[str]:
        return list(dict.fromkeys(v.key.trace_id for v in self.verdicts))

    @property
    def failed_traces(self) -> list[str]:
        failed = {v.key.trace_id for v in self.verdicts if v.failed}
        return [t for t in self.trace_ids if t in failed]

    @property
    def fired(self) -> dict[str, int]:
        counts = dict.fromkeys(self.checks, 0)
        for v in self.verdicts:
            for r in v.results:
                counts[r.check] += r.fired
        return counts

    @property
    def undecided_runs(self) -> list[RunVerdict]:
        """Runs on which nothing fired but some check could not see its input."""
        return [v for v in self.verdicts if v.verdict == UNDECIDED]

    @property
    def passed(self) -> bool:
        return all(v.clean for v in self.verdicts)

    def outcome(self) -> dict[str, Any] | None:
        """With the outcome check: the outcome rate over judged runs beside the structural
        clean rate. They answer different questions, so they are never merged."""
        if "outcome" not in self.checks:
            return None
        rows = [(v, r) for v in self.verdicts for r in v.results if r.check == "outcome"]
        judged = [r for _, r in rows if r.confidence > 0]
        true = sum(not r.fired for r in judged)
        n = len(self.verdicts)
        structural = sum(any(r.fired for r in v.results if r.check != "outcome") for v in self.verdicts)
        failed = sum(v.failed for v in self.verdicts)
        # Luck Rate (luckrate): of the runs whose output passed, the share whose path was not
        # clean (any other check fired, warnings included). Undefined, not 0, when none passed.
        lucky = sum(1 for v, r in rows if r.confidence > 0 and not r.fired
                    and any(x.fired for x in v.results if x.check != "outcome"))
        return {"judged": len(judged), "missing": len(rows) - len(judged), "true": true,
                "outcome_rate": round(true / len(judged), 4) if judged else None,
                "structural_clean_rate": round((n - structural) / n, 4) if n else None,
                "clean_rate": round((n - failed) / n, 4) if n else None,
                "passed": true, "lucky": lucky, "luck_rate": round(lucky / true, 4) if true else None}

    def to_dict(self, redact: Redact | None) -> dict[str, Any]:
        mask = _once_per_text(redact) if redact else _unmasked
        rounded = _rounded()
        results: list[dict[str, Any]] = []
        runs: list[dict[str, Any]] = []
        fired = dict.fromkeys(self.checks, 0)
        failed_traces: set[str] = set()
        undecided_runs = 0
        for v in self.verdicts:
            # what every row of a run repeats, and the run's own verdict, worked out once per
            # run: RunVerdict's properties walk the results on every call
            trace_id, run_id, completion, steps = v.key.trace_id, str(v.key), v.completion.value, v.steps
            scenario = safe_key(v.scenario, mask if redact else None)
            fired_checks, undecided_checks = [], []
            for r in v.results:
                if r.fired:
                    fired_checks.append(r.check)
                    fired[r.check] += 1
                elif r.undecided:
                    undecided_checks.append(r.check)
                row = {"trace_id": trace_id, "scenario": scenario, "check": r.check,
                       "detected": None if r.undecided else r.fired, "confidence": rounded(r.confidence),
                       "reason": mask(r.reason), "run_id": run_id, "completion": completion,
                       "steps": steps, "severity": _SEVERITY[r.severity]}
                if r.evaluator or r.span_ids:  # a plug-in's or a rule's: who made it, what it points at
                    row["evaluator"] = r.evaluator or f"faultgate-stream {__version__}"
                    row["span_ids"] = list(r.span_ids)
                    if r.measures:
                        row["measures"] = dict(r.measures)
                results.append(row)
            verdict = verdict_of(bool(fired_checks), bool(undecided_checks))
            if fired_checks:
                failed_traces.add(trace_id)
            undecided_runs += verdict == UNDECIDED
            runs.append({"run_id": run_id, "trace_id": trace_id, "root_span_id": v.key.root_span_id,
                         "scenario": scenario, "agent": mask(v.agent), "agent_version": mask(v.agent_version),
                         "completion": completion, "clean": verdict == CLEAN, "verdict": verdict,
                         "steps": steps, "spans": v.spans, "fired": fired_checks, "undecided": undecided_checks})
        trace_ids = self.trace_ids
        out: dict[str, Any] = {
            "judge": self.judge,
            "checks": self.checks,
            "redaction": self.redaction if redact else "off",
            "traces": len(trace_ids),
            "failed_traces": [t for t in trace_ids if t in failed_traces],
            "fired": fired,
            "measures": {v.key.trace_id: v.measures for v in self.verdicts},
            "results": results,
            "runs": runs,
            "undecided_runs": undecided_runs,
            "faultgate_stream_version": __version__,
        }
        outcome = self.outcome()
        if outcome is not None:
            out["outcome"] = outcome
        return out


# A severity's text by dictionary: an enum member's ``.value`` is a descriptor call.
_SEVERITY = {s: s.value for s in Severity}


def _rounded() -> Callable[[float], float]:
    """``round(x, 4)``, asked once per distinct confidence of a report: round() to a number
    of digits goes through a decimal string, and a report repeats a few confidences row
    after row. Only non-zero floats are kept: a dict would take ``1`` for ``1.0`` and
    ``-0.0`` for ``0.0``, which round, and the report, keep apart."""
    kept: dict[float, float] = {}

    def rounded(x: float) -> float:
        if type(x) is not float or not x:
            return round(x, 4)
        r = kept.get(x)
        if r is None:
            r = kept[x] = round(x, 4)
        return r

    return rounded


def _unmasked(text: str) -> str:
    return text


def masker(redact: Redact | None) -> Redact:
    """The mask every renderer of a report applies to text that leaves it: ``redact`` asked
    once per distinct text, or nothing masked (``--redact off``)."""
    return _once_per_text(redact) if redact else _unmasked


def _once_per_text(redact: Redact) -> Redact:
    """``redact`` asked once per distinct text. A mask is a function of the text alone, and
    a report repeats most reasons ("answered", "no unrecovered tool errors") run after run:
    on a 30-run report this left 40 of 240 reasons to mask."""
    masked: dict[str, str] = {}

    def mask(text: str) -> str:
        if isinstance(text, Reason):
            return redact(text)  # equal text, other quoted values: not the same to mask
        m = masked.get(text)
        if m is None:
            m = masked[text] = redact(text)
        return m

    return mask
