"""truncation: the answer carries the head of the expected token but not the whole of it,
e.g. 'Onyx' for 'Onyx-4413': the model cut an identifier short."""
from __future__ import annotations

import re
from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.expectations import Golden
from faultgate_stream.model.run import Run
from faultgate_stream.model.unread import ANSWER
from faultgate_stream.model.verdict import CheckResult

_HEAD_SPLIT = re.compile(r"[-_/ ]")
# A head shorter than this ("A", "42") appears in answers by chance.
MIN_HEAD = 3


class Truncation(Check):
    name = "truncation"
    reads = (ANSWER,)
    kind = "golden"
    description = "Answer has the head of the expected token but not the whole token (needs --golden)."

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
        if expected.lower() in run.answer_folded:
            return self.result(False, "expected answer present in full")
        head = _HEAD_SPLIT.split(expected, maxsplit=1)[0]
        if len(head) >= MIN_HEAD and head != expected and re.search(rf"\b{re.escape(head)}\b", answer, re.I):
            return self.result(True, f"answer has {head!r} but not {expected!r}")
        return self.result(False, "no truncated form of the expected answer")
