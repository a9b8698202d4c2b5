"""Where each identifier-shaped argument value came from: the user's input, an earlier
tool's result, or nowhere. ``ground`` and ``taint`` both read it; it is worked out once per
run and kept in ``Run.derived``.

Substring provenance: a value traces to a source when the source's text contains it. It
cannot tell a coincidental match from a real data flow, and it only looks at
identifier-shaped values (ids, emails, dates, numbers, enum words): prose arguments are
skipped because synthesis is the point of them, and every summary would trace to nothing.
Swap in a real data-flow trace if the false-positive rate ever justifies one.

Only top-level argument values are traced, as luckrate does: a nested object or list is
not an identifier.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from faultgate_stream.checks.trajectory.common import arguments
from faultgate_stream.checks.trajectory.secrets import shapes_in
from faultgate_stream.model.records import Step
from faultgate_stream.model.run import Run

# Values that look like identifiers but carry no provenance.
LITERALS = frozenset({"true", "false", "none", "null", "yes", "nan"})
# Identifier-ish: no spaces, 3-40 characters.
IDENTIFIER = re.compile(r"[\w.@:/+-]{3,40}")

# Provenance is quadratic in trajectory length: every step's values are searched in every
# earlier result. Tool results are whatever a web page or an email returned, so that input
# is attacker-influenced, and trajectory checks exist because agents loop: an unbounded
# search is a slow verdict waiting to happen. So it stops at a bound, and says so. Measured
# here on 8,000-character results (luckrate's cut): 500 steps with two new values each, the
# worst case since nothing found can be remembered, cost 0.62 s, 800 steps 1.6 s and 1,000
# steps 2.5 s (each doubling ~4x); with the values repeating, as ids do in real runs, 500
# steps cost 0.006 s. luckrate measured ~3.8 s at 800. No real agent run approaches 500.
MAX_PROVENANCE_STEPS = 500
# luckrate's adapters cut results at 8,000 characters; ours keep them whole, so the text
# searched is bounded too, at the same 500 x 8,000: the step whose result would pass it is
# the last one traced.
MAX_PROVENANCE_CHARS = 4_000_000

_KEY = "trajectory.provenance"  # where the answer is kept in Run.derived


@dataclass(frozen=True, slots=True)
class Traced:
    """One identifier-shaped argument value of one step, and where it came from."""

    step: Step
    argument: str
    value: str
    user: bool                  # the user's input contains it
    tools: dict[str, int]       # tool -> the first earlier step whose result contains it

    @property
    def grounded(self) -> bool:
        return self.user or bool(self.tools)

    @property
    def where(self) -> str:
        """``tool.argument='value'`` for a reason, the value withheld if it is a credential."""
        labels = shapes_in(self.value)
        shown = f"<{labels[0]} withheld>" if labels else repr(self.value)
        return f"{self.step.tool}.{self.argument}={shown}"


@dataclass(frozen=True, slots=True)
class Provenance:
    traced: tuple[Traced, ...]  # in step order
    scanned: int                # the steps whose arguments were traced: the first `scanned`
    total: int
    has_input: bool             # the run recorded the user's input

    @property
    def bounded(self) -> bool:
        return self.scanned < self.total

    @property
    def bound_note(self) -> str:
        return f"provenance checked for the first {self.scanned} steps only (of {self.total})"


def identifier(value: Any) -> str | None:
    """The value as an identifier-shaped string, or None when it is not one."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        value = str(value)
    elif not isinstance(value, str):
        return None
    if value.lower() in LITERALS or not IDENTIFIER.fullmatch(value):
        return None
    return value


def provenance(run: Run) -> Provenance:
    found = run.derived.get(_KEY)
    if found is None:
        found = run.derived[_KEY] = trace(run.prompt, run.steps)
    return found


def trace(prompt: str, steps: tuple[Step, ...]) -> Provenance:
    """Each step's identifier-shaped values against the input and the results before it.

    A value met again (an order id passed to every call) is searched only in the results
    that arrived since it was last traced, and not at all in a tool's results once that
    tool is known to have returned it."""
    # value -> [in the input, {tool: first step}, results already searched]
    memo: dict[str, list[Any]] = {}
    results: list[tuple[int, str, str]] = []   # (step index, tool, result) so far
    budget = MAX_PROVENANCE_CHARS - len(prompt)
    out: list[Traced] = []
    scanned = 0
    for st in steps:
        if scanned == MAX_PROVENANCE_STEPS or budget < 0:
            break
        for name, raw in arguments(st.arguments):
            value = identifier(raw)
            if value is None:
                continue
            m = memo.get(value)
            if m is None:
                m = memo[value] = [value in prompt, {}, 0]
            tools = m[1]
            for index, tool, text in results[m[2]:]:
                if tool not in tools and value in text:
                    tools[tool] = index
            m[2] = len(results)
            out.append(Traced(st, name, value, m[0], dict(tools)))
        scanned += 1
        budget -= len(st.result)
        results.append((st.index, st.tool, st.result))
    return Provenance(tuple(out), scanned, len(steps), bool(prompt.strip()))
