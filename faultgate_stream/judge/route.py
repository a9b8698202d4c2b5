"""Which decided runs the judge is asked about (``judge.when``, ``judge.sample``): the rule
verdict is the cheap first pass, and the judge, which costs a model call per question,
reads the runs it could not settle or that look unlike the baseline.

Routes, first match wins: ``failed`` (a check fired: the judge's answer is a second
opinion, or names what the rules missed), ``undecided`` (a check could not see its
input), ``drifted`` (the run's agent and version drifted from the baseline, and this
run's shape is one of the categories that rose: ``gate/live.py`` ``drifted``), then
``sampled``: a share ``judge.sample`` of the remaining runs, so the judge still sees clean
ones. ``when: [all]`` (the default) routes every run, as before routing existed.

Sampling is by the trace id's hash, not a random draw: the same run is sampled or not on
every replica and every replay, and a test can say which runs will be.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable

from faultgate_stream.model.verdict import FAILED, UNDECIDED, RunVerdict

ALL, DRIFTED, SAMPLED, SKIPPED = "all", "drifted", "sampled", "skipped"
WHEN = (ALL, FAILED, UNDECIDED, DRIFTED)


def sampled(trace_id: str, share: float) -> bool:
    """Whether a run of this trace falls in ``share`` (0..1) of runs; stable per trace."""
    if share <= 0:
        return False
    if share >= 1:
        return True
    h = int.from_bytes(hashlib.sha256(trace_id.encode("utf-8", "surrogatepass")).digest()[:8], "big")
    return h < share * 2**64


class Router:
    def __init__(self, when: tuple[str, ...], sample: float,
                 drifted: Callable[[RunVerdict], bool] | None = None) -> None:
        self.when = frozenset(when)
        self.sample = sample
        self._drifted = drifted

    def route(self, v: RunVerdict) -> str:
        """The route the run takes (``failed``, ``undecided``, ``drifted``, ``sampled``,
        ``all``), or ``skipped``."""
        if ALL in self.when:
            return ALL
        verdict = v.verdict
        if verdict == FAILED and FAILED in self.when:
            return FAILED
        if verdict == UNDECIDED and UNDECIDED in self.when:
            return UNDECIDED
        if DRIFTED in self.when and self._drifted is not None and self._drifted(v):
            return DRIFTED
        if sampled(v.key.trace_id, self.sample):
            return SAMPLED
        return SKIPPED
