"""wrong_answer: the run answered, and the expected answer is not in it (case-insensitive)."""
from __future__ import annotations

from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.expectations import Golden
from faultgate_stream.model.run import Run
from faultgate_stream.model.unread import ANSWER
from faultgate_stream.model.verdict import CheckResult


class WrongAnswer(Check):
    name = "wrong_answer"
    reads = (ANSWER,)
    kind = "golden"
    description = "Answered, but the expected answer is not in the final answer (needs --golden)."

    def __init__(self, golden: Golden) -> None:
        self.golden = golden

    def finish(self, state: Any, run: Run) -> CheckResult:
        expected = self.golden.expected(run)
        if expected is None:
            return self.result(False, "no golden answer for this scenario", 0.0)
        answer = run.answer.strip()
        if not answer:
            if run.answer_not_captured:
                return self.undecided(run.answer_not_captured)
            return self.result(False, "no answer to grade")
        ok = expected.lower() in run.answer_folded
        return self.result(not ok, f"expected {expected!r} {'found' if ok else 'not found'} in answer")
