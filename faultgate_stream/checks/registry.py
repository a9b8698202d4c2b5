"""Check names -> checks. The only place that knows every check; the order here is the
order of report columns, faultgate's order."""
from __future__ import annotations

from faultgate_stream.checks.abstention import Abstention
from faultgate_stream.checks.base import Check
from faultgate_stream.checks.context_overflow import ContextOverflow
from faultgate_stream.checks.expectations import Golden, Outcomes
from faultgate_stream.checks.loop import Loop
from faultgate_stream.checks.outcome import Outcome
from faultgate_stream.checks.policy.check import PolicyCheck
from faultgate_stream.checks.policy.schema import Policy
from faultgate_stream.checks.repeated_call import RepeatedCall
from faultgate_stream.checks.search_loop import SearchLoop
from faultgate_stream.checks.truncation import Truncation
from faultgate_stream.checks.unrecovered_tool_error import UnrecoveredToolError
from faultgate_stream.checks.window_store import WindowStore
from faultgate_stream.checks.wrong_answer import WrongAnswer
from faultgate_stream.model.errors import InputError

RULES: tuple[type[Check], ...] = (SearchLoop, Abstention, PolicyCheck, RepeatedCall, UnrecoveredToolError,
                                  ContextOverflow)
GOLDEN: tuple[type[WrongAnswer] | type[Truncation], ...] = (WrongAnswer, Truncation)
# Checks faultgate does not have: run when named (``--check``, ``checks.enabled``), never by
# default, so that the default set, the report's columns and the exit codes stay faultgate's.
EXTRA: tuple[type[Check], ...] = (Loop,)
ALL: tuple[type[Check], ...] = (*RULES, *GOLDEN, Outcome, *EXTRA)
NAMES = tuple(c.name for c in ALL)


def policy_checks(policy: Policy, store: WindowStore | None = None, namespace: str = "") -> list[Check]:
    """What a policy file brings: the ``policy`` check with its keys, and, when its
    ``requires`` name interchangeable tools, an ``unrecovered_tool_error`` that counts a
    success of an alternative as recovery (see that module). ``store`` and ``namespace``
    are where its windowed budgets keep other runs' counts (``PolicyCheck``)."""
    out: list[Check] = [PolicyCheck(policy, store=store, namespace=namespace)]
    if policy.alternatives:
        out.append(UnrecoveredToolError(policy.alternatives))
    return out


def select(names: list[str] | None = None, *, golden: Golden | None = None,
           outcomes: Outcomes | None = None, policy: Policy | None = None,
           store: WindowStore | None = None) -> list[Check]:
    """The checks to run. By default every rule, the golden checks when answers are given,
    and ``outcome`` when outcomes are. A named golden check without answers is an error:
    it would report nothing while looking like it ran."""
    if names is None:
        wanted = [c.name for c in RULES] + ([c.name for c in GOLDEN] if golden is not None else [])
        wanted += ["outcome"] if outcomes is not None else []
    else:
        wanted = names
    with_policy = {c.name: c for c in policy_checks(policy, store)} if policy is not None else {}
    out: list[Check] = []
    for n in wanted:
        if n in with_policy:
            out.append(with_policy[n])
            continue
        cls = next((c for c in ALL if c.name == n), None)
        if cls is None:
            raise InputError(f"unknown check {n!r}; available: {', '.join(NAMES)}")
        if cls in GOLDEN:
            if golden is None:
                raise InputError(f"check {n!r} needs --golden golden.json (expected answers)")
            out.append(cls(golden))
        elif cls is Outcome:
            out.append(Outcome(outcomes))
        else:
            out.append(cls())
    return out
