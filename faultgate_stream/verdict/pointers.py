"""Which steps a check's result points at: what a report marks on a run's timeline.

In order, the first that gives any:

1. the result's own ``span_ids``, when its check named the spans (``CheckResult.span_ids``);
2. the spans of the check's early findings on the run (``EarlyFinding.span_id``): a check
   that fired early fired at the span that arrived;
3. the steps its reason names. faultgate's reasons name steps by ``Step.index``, 1-based in
   start order ("step 4: issue_refund.amount 900 > max 500", "failed at step 1", "repeats
   step 3", "(steps 2, 3, 4)", "on step(s) 3"), and every check keeps that wording, so the
   number is the step, and the step's span is known.

Only the check's own words are read for (3): a value the reason quotes (a ``Reason``'s
quoted parts: an argument, a tool result, an answer) is text from outside, and "step 9" in
it names nothing. A number past the run's last step names nothing either. A result that
names no step (an answer that abstains, a search loop over the whole run) points at the
run, not at a step, and is shown on the run alone.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from faultgate_stream.model.reason import Quote, Reason
from faultgate_stream.model.verdict import CheckResult, EarlyFinding

# "step 4", "steps 2, 3, 4", "step(s) 3, 5": the forms the checks write (see above)
_STEP_REFS = re.compile(r"\bstep(?:s|\(s\))? (\d+(?:, \d+)*)")


def named_steps(reason: str) -> tuple[int, ...]:
    """The step numbers a reason names in its own words, in the order it names them, once each."""
    own = "".join(p for p in reason.parts if not isinstance(p, Quote)) if isinstance(reason, Reason) else reason
    seen: dict[int, None] = {}
    for m in _STEP_REFS.finditer(own):
        for n in m.group(1).split(", "):
            seen[int(n)] = None
    return tuple(seen)


def pointed_spans(result: CheckResult, early: Iterable[EarlyFinding],
                  step_spans: Mapping[int, str]) -> tuple[str, ...]:
    """The span ids ``result`` points at, given the run's ``early`` findings and its steps'
    spans by step index (``Step.index -> Step.span_id``; empty where the steps are not
    known, as live, where only a verdict is kept); empty when it names no step."""
    if result.span_ids:
        return result.span_ids
    found = tuple(dict.fromkeys(f.span_id for f in early if f.check == result.check))
    if found:
        return found
    return tuple(dict.fromkeys(step_spans[n] for n in named_steps(result.reason) if n in step_spans))
