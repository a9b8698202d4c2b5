"""require_complete: a run that stopped half-way cannot prove it followed the rules.

Incomplete: no root span, no final answer, a termination that names an error, abort,
failure, timeout, crash or a step budget, an error on the root span, or a root span with
no end time. Decided at the end of the run: a root span arrives once, but the answer may
come from the last span of the run.
"""
from __future__ import annotations

import re

from faultgate_stream.checks.signals import span_error
from faultgate_stream.model.run import Run

# terminations that mean the run did not finish: errors, aborts, budgets (faultgate's)
ERROR_TERMINATION = re.compile(r"error|exception|abort|fail|time ?out|timed out|crash|too many|max[_ ]?steps|"
                               r"step (?:cap|limit)|max iterations|iteration limit", re.I)


def incomplete(run: Run) -> list[str]:
    root = run.root
    if root is None:
        return ["run incomplete: no root span"]
    bad = []
    if not run.answer.strip():
        bad.append("run incomplete: no final answer")
    if ERROR_TERMINATION.search(run.termination):
        bad.append(f"run incomplete: terminated {run.termination!r}")
    err = span_error(root)
    if err:
        bad.append(f"run incomplete: root span error ({err})")
    if not root.end_ns:
        bad.append("run incomplete: root span has no end time")
    return bad
