"""``RunVerdict`` -> the verdict API's JSON object, every reason, agent name and scenario
key masked.

Masking happens here, once per verdict, when a reader first asks for it: a request can
reach a verdict only as its record, so never a raw reason. The steps a fired check points at
are given as span ids (its own, or its early findings') and as the step numbers its reason
names (``verdict/pointers.py``); live, only the verdict is kept, not the run's steps.
"""
from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from operator import attrgetter
from typing import Any

from faultgate_stream.model.verdict import RunVerdict
from faultgate_stream.verdict.pointers import named_steps, pointed_spans
from faultgate_stream.verdict.redact import safe_key

Redact = Callable[[str], str]

_REASON, _CHECK = attrgetter("reason"), attrgetter("check")


def rfc3339(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def record(v: RunVerdict, redact: Redact) -> dict[str, Any]:
    fired, undecided, passed = [], [], []
    for r in v.results:
        if r.fired:
            fired.append({"check": r.check, "severity": r.severity.value, "confidence": round(r.confidence, 4),
                          "kind": r.kind, "reason": redact(r.reason), "agent": redact(r.agent),
                          "span_ids": list(pointed_spans(r, v.early, {})), "steps": list(named_steps(r.reason))})
        elif r.undecided:
            undecided.append({"check": r.check, "reason": redact(r.reason)})
        else:
            passed.append(r.check)
    out: dict[str, Any] = {
        "run_id": str(v.key), "trace_id": v.key.trace_id, "root_span_id": v.root_span_id,
        "agent": redact(v.agent), "agent_version": redact(v.agent_version),
        "scenario": safe_key(v.scenario, redact), "verdict": v.verdict, "completion": v.completion.value,
        "steps": v.steps, "spans": v.spans,
        "decided_time": rfc3339(v.decided_ns) if v.decided_ns else None, "decided_time_unix_nano": v.decided_ns,
        "fired": fired, "undecided": undecided, "passed": passed,
        "early": [{"check": f.check, "span_id": f.span_id, "reason": redact(f.reason)} for f in v.early],
        "measures": {k: x for k, x in v.measures.items() if x is not None},
    }
    if v.revision:
        out["revision"] = {"revision": v.revision, "previous": v.previous, "amended_checks": list(v.amended_checks),
                           "amended_by": v.amended_by}
    return out


def size_of(v: RunVerdict) -> int:
    """Approximate bytes a run's entry holds, as a verdict or as its record: its text, plus
    what a dict and list per result cost, plus the span ids the verdict carries. (An
    estimate, as the amendment store's: exact sizes would cost a walk of every object.)"""
    # C-level loops (``map``): every decided run is sized, and a comprehension was ~150
    # bytecodes a run (bench/hot_path.py)
    results, early = v.results, v.early
    text = sum(map(len, map(_REASON, results))) + sum(map(len, map(_CHECK, results)))
    if early:
        text += sum(map(len, map(_REASON, early))) + sum(map(len, map(_CHECK, early)))
    return (1_200 + 300 * (len(results) + len(early)) + text + len(v.agent) + len(v.scenario)
            + 80 * len(v.released_span_ids))
