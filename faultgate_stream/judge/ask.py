"""Putting a run's judge questions to a judge: the rendered run (masked first when the
judge is remote), one answer per question, and an undecided result for a question the
judge could not answer."""
from __future__ import annotations

from collections.abc import Callable

from faultgate_stream.judge.contract import Judge, JudgeError, Question
from faultgate_stream.judge.render import render
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import CheckResult


def judge_run(run: Run, judge: Judge, questions: list[Question],
              mask: Callable[[str], str] | None = None) -> list[CheckResult]:
    state = render(run, judge.budget)
    if judge.remote and mask is not None:
        state = mask(state)
    out = []
    for q in questions:
        try:
            a = judge.ask(state, q.text)
        except JudgeError as e:
            # no answer is not "not detected": the question stays undecided
            out.append(CheckResult(q.check, False, 0.0, f"undecided: judge gave no answer: {e}", kind="judge",
                                   undecided=True))
            continue
        out.append(CheckResult(q.check, a.detected, a.confidence, f"{judge.name}: {a.reason}", kind="judge"))
    return out
