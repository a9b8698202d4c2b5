"""abstention: the final answer says, in so many words, that the information could not be
found.

"Cannot" alone is not abstention: a support agent that "cannot modify the order again" or
is "unable to verify" an unauthenticated caller did its job. The inability has to be
about *finding*. faultgate measured this on 180 tau2 retail runs: the narrow list fires
once ("couldn't locate the ... payment method"); a plain "cannot / unable to" list fired
21 times, on policy reminders and refusals. ponytail: a paraphrase this list does not
know is missed (FAULTLINE P4: 1/1 caught, 0 false positives in 200).

The phrases (native/core/src/checks/abstention.rs, matched as Python's ``re`` with ``re.I``
matches them): an inability ("couldn't", "could not", "cannot", "unable to", "failed to",
...) followed within two words by finding ("find", "locate", "retrieve", "identify",
"determine", "look up", "discover"); "no (matching|relevant) document(s)/information/
record(s)/result(s)/source(s)/data"; "information/answer/record/result/document/data (was|
were|is|are) not found/available"; "not found"; "don't know", "do not have that/this/any/
enough/the information".
"""
from __future__ import annotations

from typing import Any

from faultgate_stream import _native
from faultgate_stream.checks.base import Check
from faultgate_stream.model.run import Run
from faultgate_stream.model.unread import ANSWER
from faultgate_stream.model.verdict import CheckResult


class Abstention(Check):
    name = "abstention"
    reads = (ANSWER,)
    fires_on_evidence = True
    description = "Final answer explicitly says the information could not be found."

    def __init__(self) -> None:
        self._outcomes = _native.Outcomes(CheckResult, self.name, self.severity, self.kind)

    def finish(self, state: Any, run: Run) -> CheckResult:
        return _native.abstention(run, self._outcomes)
