"""Check names -> checks. The only place that knows every check; the order here is the
order of report columns, faultgate's order.

Each check is named here with the module and class that implement it, and its module is
imported when the check is selected: ``check --check search_loop`` loads one check, not
every check's patterns and schemas (the class's own ``name`` must equal its name here;
``tests/checks/test_registry.py`` holds them together). ``RULES``, ``GOLDEN``, ``EXTRA``
and ``ALL`` are the classes themselves, imported on first use of those names.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from faultgate_stream.model.errors import InputError

if TYPE_CHECKING:
    from faultgate_stream.checks.base import Check
    from faultgate_stream.checks.expectations import Golden, Outcomes
    from faultgate_stream.checks.policy.schema import Policy
    from faultgate_stream.checks.window_store import WindowStore

_PACKAGE = "faultgate_stream.checks."
# name -> "module:Class", relative to this package
_RULES = {
    "search_loop": "search_loop:SearchLoop",
    "abstention": "abstention:Abstention",
    "policy": "policy.check:PolicyCheck",
    "repeated_call": "repeated_call:RepeatedCall",
    "unrecovered_tool_error": "unrecovered_tool_error:UnrecoveredToolError",
    "context_overflow": "context_overflow:ContextOverflow",
}
_GOLDEN = {"wrong_answer": "wrong_answer:WrongAnswer", "truncation": "truncation:Truncation"}
_OUTCOME = {"outcome": "outcome:Outcome"}
# Checks faultgate does not have: run when named (``--check``, ``checks.enabled``), never by
# default, so that the default set, the report's columns and the exit codes stay faultgate's.
_EXTRA = {"loop": "loop:Loop"}
_WHERE = {**_RULES, **_GOLDEN, **_OUTCOME, **_EXTRA}

RULE_NAMES = tuple(_RULES)
GOLDEN_NAMES = tuple(_GOLDEN)
EXTRA_NAMES = tuple(_EXTRA)
NAMES = tuple(_WHERE)


def check_class(name: str) -> type[Check]:
    """The class of the check named ``name``, its module imported now if it was not yet.
    Raises ``InputError`` for a name that is not a check."""
    where = _WHERE.get(name)
    if where is None:
        raise InputError(f"unknown check {name!r}; available: {', '.join(NAMES)}")
    module, cls = where.split(":")
    return getattr(importlib.import_module(_PACKAGE + module), cls)


def __getattr__(attr: str) -> Any:
    # the class tuples, for callers that want classes (``checks`` lists them all)
    groups = {"RULES": RULE_NAMES, "GOLDEN": GOLDEN_NAMES, "EXTRA": EXTRA_NAMES, "ALL": NAMES}
    if attr not in groups:
        raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
    return tuple(check_class(n) for n in groups[attr])


def policy_checks(policy: Policy, store: WindowStore | None = None, namespace: str = "") -> list[Check]:
    """What a policy file brings: the ``policy`` check with its keys, and, when its
    ``requires`` name interchangeable tools, an ``unrecovered_tool_error`` that counts a
    success of an alternative as recovery (see that module). ``store`` and ``namespace``
    are where its windowed budgets keep other runs' counts (``PolicyCheck``)."""
    out: list[Check] = [check_class("policy")(policy, store=store, namespace=namespace)]
    if policy.alternatives:
        out.append(check_class("unrecovered_tool_error")(policy.alternatives))
    return out


def select(names: list[str] | None = None, *, golden: Golden | None = None,
           outcomes: Outcomes | None = None, policy: Policy | None = None,
           store: WindowStore | None = None) -> list[Check]:
    """The checks to run. By default every rule, the golden checks when answers are given,
    and ``outcome`` when outcomes are. A named golden check without answers is an error:
    it would report nothing while looking like it ran."""
    if names is None:
        wanted = list(RULE_NAMES) + (list(GOLDEN_NAMES) if golden is not None else [])
        wanted += list(_OUTCOME) if outcomes is not None else []
    else:
        wanted = names
    with_policy = {c.name: c for c in policy_checks(policy, store)} if policy is not None else {}
    out: list[Check] = []
    for n in wanted:
        if n in with_policy:
            out.append(with_policy[n])
            continue
        cls: Any = check_class(n)
        if n in _GOLDEN:
            if golden is None:
                raise InputError(f"check {n!r} needs --golden golden.json (expected answers)")
            out.append(cls(golden))
        elif n in _OUTCOME:
            out.append(cls(outcomes))
        else:
            out.append(cls())
    return out
