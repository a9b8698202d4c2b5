"""abstention: the final answer says, in so many words, that the information could not be
found.

"Cannot" alone is not abstention: a support agent that "cannot modify the order again" or
is "unable to verify" an unauthenticated caller did its job. The inability has to be
about *finding*. faultgate measured this on 180 tau2 retail runs: the narrow list fires
once ("couldn't locate the ... payment method"); a plain "cannot / unable to" list fired
21 times, on policy reminders and refusals. ponytail: a paraphrase this list does not
know is missed (FAULTLINE P4: 1/1 caught, 0 false positives in 200).
"""
from __future__ import annotations

import re
from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import CheckResult

_INABILITY = (r"couldn.t|could not|cannot|can.t|unable to|not able to|wasn.t able to|was not able to"
              r"|did not|didn.t|failed to")
_FINDING = r"find|locate|retrieve|identify|determine|look\s?up|discover"
ABSTAIN = re.compile(
    rf"\b(?:{_INABILITY})\s+(?:\w+\s+){{0,2}}?(?:{_FINDING})\b"
    r"|\bno (?:matching |relevant )?(?:document|information|record|result|source|data)s?\b"
    r"|\b(?:information|answer|record|result|document|data)s? (?:(?:was|were|is|are) )?not (?:found|available)\b"
    r"|\bnot found\b"
    r"|\b(?:don.t|do not) (?:know|have (?:that|this|any|enough|the) information)\b",
    re.I,
)


class Abstention(Check):
    name = "abstention"
    description = "Final answer explicitly says the information could not be found."

    def finish(self, state: Any, run: Run) -> CheckResult:
        answer = run.answer.strip()
        if not answer:
            if run.answer_not_captured:
                return self.undecided(run.answer_not_captured)
            return self.result(False, "no answer")
        m = ABSTAIN.search(answer)
        return self.result(m is not None, f"answer says {m.group(0)!r}" if m else "answer does not abstain")
