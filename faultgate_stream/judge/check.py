"""A judge question as a check, for ``check --judge``: offline the judge is asked when the
run completes, in line, since nothing waits on a file's verdicts but the user. (Live,
judge questions never run in line: they would hold up ingestion behind a model.)"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.judge.ask import judge_run
from faultgate_stream.judge.contract import Judge, Question
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import CheckResult


class JudgeCheck(Check):
    kind = "judge"

    def __init__(self, judge: Judge, question: Question, mask: Callable[[str], str] | None = None) -> None:
        self.name = question.check  # type: ignore[misc]  # one class, a name per question
        self.description = question.description  # type: ignore[misc]
        self._judge, self._question, self._mask = judge, question, mask

    def finish(self, state: Any, run: Run) -> CheckResult:
        (result,) = judge_run(run, self._judge, [self._question], self._mask)
        return result
