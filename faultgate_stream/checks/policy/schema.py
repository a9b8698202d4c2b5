"""The policy file: what the agent was allowed to do, in faultgate 0.4.1's keys.

===================  =================================================  ==================
key                  value                                              rule module
===================  =================================================  ==================
allow                tool names; any other tool is a violation          ``allow``
deny_patterns        regexes searched in the argument text (defaults    ``deny_patterns``
                     below, active without a policy file)
max_arg_chars        most characters of one call's argument text        ``arguments``
max_calls            most tool calls in a run; or ``{max, within?,       ``budgets``,
                     per?, tools?, by?}`` (one or a list): calls        ``windows``
                     counted over a time window, a session or an agent
limits               ``{tool, arg, min?, max?}``: numeric bounds;        ``arguments``,
                     ``{tool, arg, sum: true, max, within?, per?,       ``windows``
                     by?}``: a running total of the argument
identity             ``{arg, session_attr?, tools?}``: argument equals   ``identity``
                     a root-span attribute (default ``enduser.id``)
values               ``{tool, arg, allowed}``: text allowlist            ``arguments``
required_args        ``{tool, args}``: present and not empty             ``arguments``
requires             ``{tool, after, ...}``: an earlier call first       ``requires``
max_calls_per_arg    ``{tools, arg, max}``: successful calls per value   ``budgets``
confirmation         ``{tools, by, same_arg?}``: confirmed mutations     ``confirmation``
require_complete     true: an incomplete run is a violation             ``complete``
===================  =================================================  ==================

The schema is declarative: each record lists its keys as dataclass fields, and each field
names the kind of value it accepts (``key(kind, ...)``). One walker (``_record``) validates
every record from those declarations, so an unknown key is found from the fields, not from
an ``if/elif`` per key. Every problem is collected, each prefixed with its key path in
faultgate's words (``policy: limits[0].max must be a finite number``); a policy with any
raises one ``PolicyError`` listing them all. faultgate stops at the first, with the same
text.

Four keys faultgate takes unchecked are checked here too (``allow``, ``deny_patterns``,
``max_calls``, ``max_arg_chars``): faultgate reads ``"allow": "search"`` as the letters
of "search" and crashes mid-run on ``"max_calls": "10"`` or a bad regex. Those are
policy errors here, found at load.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any


from faultgate_stream.checks.policy.deny_patterns import DEFAULT_DENY_PATTERNS, compile_pattern
from faultgate_stream.checks.documents import load_document
from faultgate_stream.model.errors import InputError

# The root-span attribute an ``identity`` rule compares with when it names none: the
# OpenTelemetry attribute for the authenticated user.
DEFAULT_SESSION_ATTR = "enduser.id"
PREDICATE_OPS = ("equals", "in", "not_in", "exists")
# What a windowed budget counts over (``per``): one run, the runs of one session
# (``session.id``, else ``gen_ai.conversation.id``), or every run of one agent.
WINDOW_SCOPES = ("run", "session", "agent")
_WINDOW = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$")
_WINDOW_NS = {"ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9, "d": 86400 * 10**9}


def window_ns(text: str) -> int:
    """``10m`` -> nanoseconds (span times are nanoseconds). ``text`` was validated by ``window``."""
    m = _WINDOW.match(text)
    assert m is not None, text
    return int(float(m.group(1)) * _WINDOW_NS[m.group(2)])


class PolicyError(InputError):
    """A policy that cannot be used. ``problems`` holds one line per problem, each exactly
    as faultgate words it; the message is those lines (just the one, when there is one)."""

    def __init__(self, problems: list[str], source: str | Path | None = None) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems
        self.source = source


# --- kinds: what one key accepts ----------------------------------------------------------
# A kind takes (where, value, problems), returns the value in its stored form, or appends
# a problem naming ``where`` and returns _INVALID.

_INVALID: Any = object()
Kind = Callable[[str, Any, list[str]], Any]


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _bad(problems: list[str], where: str, what: str) -> Any:
    problems.append(f"policy: {where} {what}")
    return _INVALID


def text(where: str, v: Any, problems: list[str]) -> Any:
    return v if isinstance(v, str) else _bad(problems, where, "must be a string")


def finite_number(where: str, v: Any, problems: list[str]) -> Any:
    # kept as written (500, not 500.0): reasons print it with :g, as faultgate does
    return v if _is_number(v) and math.isfinite(v) else _bad(problems, where, "must be a finite number")


def at_least_one(where: str, v: Any, problems: list[str]) -> Any:
    return v if _is_whole(v) and v >= 1 else _bad(problems, where, "must be a whole number >= 1")


def count_or_null(where: str, v: Any, problems: list[str]) -> Any:
    # null is "off", as a missing key is (faultgate reads it so)
    return v if v is None or (_is_whole(v) and v >= 0) else _bad(problems, where, "must be a whole number >= 0")


def window(where: str, v: Any, problems: list[str]) -> Any:
    # kept as written ("10m"): reasons name the window as the policy does
    if isinstance(v, str) and _WINDOW.match(v) and window_ns(v) > 0:
        return v.strip()
    return _bad(problems, where, "must be a duration like 30s, 10m, 24h or 7d")


def scope(where: str, v: Any, problems: list[str]) -> Any:
    return v if v in WINDOW_SCOPES else _bad(problems, where, f"must be one of {', '.join(WINDOW_SCOPES)}")


def call_budget(where: str, v: Any, problems: list[str]) -> Any:
    """``max_calls``: a whole number (faultgate's per-run budget), or windowed budgets: one
    object or a list of them (``CallWindow``)."""
    if isinstance(v, Mapping):
        got = _record(CallWindow, where, v, problems)
        return got if got is _INVALID else (got,)
    if isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v):
        return records(CallWindow)(where, v, problems)
    return count_or_null(where, v, problems)


def flag(where: str, v: Any, problems: list[str]) -> Any:
    return v if isinstance(v, bool) else _bad(problems, where, "must be true or false")


def tool_set(where: str, v: Any, problems: list[str]) -> Any:
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return frozenset(v)
    return _bad(problems, where, "must be a list of tool names")


def after_tools(where: str, v: Any, problems: list[str]) -> Any:
    # a tuple in the written order: reasons join it with " or "
    if isinstance(v, str):
        return (v,)
    if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
        return tuple(v)
    return _bad(problems, where, "must be a tool name or a list of tool names")


def allowed_texts(where: str, v: Any, problems: list[str]) -> Any:
    if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
        return tuple(v)
    return _bad(problems, where, "must be a list of strings")


def names(where: str, v: Any, problems: list[str]) -> Any:
    if isinstance(v, list) and v and all(isinstance(x, str) and x for x in v):
        return tuple(v)
    return _bad(problems, where, "must be a non-empty list of names")


def name_set(where: str, v: Any, problems: list[str]) -> Any:
    got = names(where, v, problems)
    return got if got is _INVALID else frozenset(got)


def patterns(where: str, v: Any, problems: list[str]) -> Any:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        return _bad(problems, where, "must be a list of regular expressions")
    before = len(problems)
    for i, p in enumerate(v):
        try:
            re.compile(p, re.I)
        except re.error as e:
            _bad(problems, f"{where}[{i}]", f"is not a valid regular expression ({e})")
            continue
        try:
            compile_pattern(p)  # what the check runs: see deny_patterns.py
        except ValueError as e:
            _bad(problems, f"{where}[{i}]", str(e))
    return tuple(v) if len(problems) == before else _INVALID


def predicates(where: str, v: Any, problems: list[str]) -> Any:
    if not isinstance(v, list) or not v:
        return _bad(problems, where, "must be a non-empty list of predicates")
    out = [_predicate(f"{where}[{i}]", p, problems) for i, p in enumerate(v)]
    return _INVALID if _INVALID in out else tuple(out)


def record(cls: type) -> Kind:
    def kind(where: str, v: Any, problems: list[str]) -> Any:
        return _record(cls, where, v, problems)
    return kind


def records(cls: type) -> Kind:
    def kind(where: str, v: Any, problems: list[str]) -> Any:
        if not isinstance(v, list):
            return _bad(problems, where, "must be a list")
        out = [_record(cls, f"{where}[{i}]", x, problems) for i, x in enumerate(v)]
        return _INVALID if _INVALID in out else tuple(out)
    return kind


def key(kind: Kind, *, required: bool = False, default: Any = MISSING) -> Any:
    """A declared policy key: the kind of value it takes, and whether it must be there."""
    return field(default=default, metadata={"kind": kind, "required": required})


def _record(cls: type, where: str, raw: Any, problems: list[str]) -> Any:
    """``cls`` built from ``raw`` after checking it against ``cls``'s declared keys."""
    if not isinstance(raw, Mapping):
        return _bad(problems, where, "must be an object")
    declared = {f.name: f for f in fields(cls)}
    before = len(problems)
    missing = [n for n, f in declared.items() if f.metadata["required"] and n not in raw]
    if missing:
        _bad(problems, where, f"needs {' and '.join(sorted(repr(k) for k in missing))}")
    unknown = [k for k in raw if k not in declared]
    if unknown:
        _bad(problems, where, f"has unknown keys {sorted(unknown, key=str)}")
    values = {n: f.metadata["kind"](f"{where}.{n}", raw[n], problems) for n, f in declared.items() if n in raw}
    if len(problems) > before:
        return _INVALID
    built = cls(**values)
    problems += built.problems(where)
    return built if len(problems) == before else _INVALID


# --- records ------------------------------------------------------------------------------


class _Record:
    def problems(self, where: str) -> list[str]:
        """What is wrong with the record as a whole (its keys are each valid)."""
        return []


class _Windowed:
    """What a windowed budget adds: where its count is kept (``per``), over how long
    (``within``; none: as long as the store keeps the key) and by which argument value
    (``by``: refunds per customer)."""

    within: str | None
    per: str | None
    by: str | None

    @property
    def scope(self) -> str:
        return self.per or "run"

    @property
    def within_ns(self) -> int | None:
        return window_ns(self.within) if self.within else None


@dataclass(frozen=True, kw_only=True)
class CallWindow(_Record, _Windowed):
    """``max_calls`` as an object: at most ``max`` calls (to ``tools``, else any tool)
    ``within`` a window, ``per`` run, session or agent, optionally per value of ``by``."""

    max: int = key(count_or_null, required=True)
    within: str | None = key(window, default=None)
    per: str | None = key(scope, default=None)
    tools: frozenset[str] | None = key(tool_set, default=None)
    by: str | None = key(text, default=None)

    def problems(self, where: str) -> list[str]:
        if self.max is None:
            return [f"policy: {where}.max must be a whole number >= 0"]
        if self.by is not None and self.tools is None:
            # every tool would need the argument, and a call without it fails closed
            return [f"policy: {where}.by needs 'tools' (the tools that carry {self.by!r})"]
        return []


@dataclass(frozen=True, kw_only=True)
class Limit(_Record, _Windowed):
    """A numeric floor and/or ceiling on one argument of one tool (``issue_refund.amount``);
    with ``sum: true``, a ceiling on the running total of that argument ``within`` a
    window, ``per`` run, session or agent, optionally per value of ``by``."""

    tool: str = key(text, required=True)
    arg: str = key(text, required=True)  # a dotted path into the JSON arguments
    min: float | None = key(finite_number, default=None)
    max: float | None = key(finite_number, default=None)
    sum: bool = key(flag, default=False)
    within: str | None = key(window, default=None)
    per: str | None = key(scope, default=None)
    by: str | None = key(text, default=None)

    def problems(self, where: str) -> list[str]:
        if self.sum:
            if self.max is None or self.min is not None:
                return [f"policy: {where} with 'sum' needs 'max' and takes no 'min' (a ceiling on a running total)"]
            return []
        extra = [k for k in ("within", "per", "by") if getattr(self, k) is not None]
        if extra:
            return [f"policy: {where}.{extra[0]} needs 'sum': true (a bound on one call's value has no window)"]
        if self.min is None and self.max is None:
            return [f"policy: {where} needs 'min' or 'max'"]
        if self.min is not None and self.max is not None and self.min > self.max:
            return [f"policy: {where} min {self.min} > max {self.max}"]
        return []


@dataclass(frozen=True, kw_only=True)
class Identity(_Record):
    """An argument that must equal the run's authenticated principal, a root-span attribute."""

    arg: str = key(text, required=True)
    session_attr: str = key(text, default=DEFAULT_SESSION_ATTR)
    tools: frozenset[str] | None = key(tool_set, default=None)  # None: every tool that passes ``arg``


@dataclass(frozen=True, kw_only=True)
class Predicate:
    """A typed condition on a dotted path into a parsed JSON result: ``op`` is one of
    ``PREDICATE_OPS``; ``value`` a JSON value (``equals``), a tuple (``in``, ``not_in``)
    or a bool (``exists``)."""

    path: str
    op: str
    value: Any


@dataclass(frozen=True, kw_only=True)
class Requirement(_Record):
    """``tool`` may only run after an earlier call to one of ``after``.

    Off by default, each narrows which earlier call counts: ``result_contains`` (a
    substring of its result), ``same_arg`` (the same value of that argument: the order
    looked up is the order changed), ``success`` (it did not fail), ``result`` (typed
    predicates on its JSON result), ``latest`` (only the most recent such call, per
    ``same_arg`` value) and ``invalidated_by`` (a later successful call to one of these,
    on the same value, voids it)."""

    tool: str = key(text, required=True)
    after: tuple[str, ...] = key(after_tools, required=True)
    result_contains: str | None = key(text, default=None)
    same_arg: str | None = key(text, default=None)
    success: bool = key(flag, default=False)
    result: tuple[Predicate, ...] = key(predicates, default=())
    latest: bool = key(flag, default=False)
    invalidated_by: frozenset[str] = key(name_set, default=frozenset())

    @property
    def stateful(self) -> bool:
        """Uses a 0.4 key. A requirement without one is judged exactly as faultgate 0.3.1 did."""
        return self.success or bool(self.result) or self.latest or bool(self.invalidated_by)


@dataclass(frozen=True, kw_only=True)
class PerValueBudget(_Record):
    """At most ``max`` successful calls to ``tools`` per value of ``arg`` (one exchange per order)."""

    tools: frozenset[str] = key(tool_set, required=True)
    arg: str = key(text, required=True)
    max: int = key(at_least_one, required=True)


@dataclass(frozen=True, kw_only=True)
class AllowedValues(_Record):
    """``tool``'s ``arg``, when present, must be one of ``allowed`` (as text, trimmed)."""

    tool: str = key(text, required=True)
    arg: str = key(text, required=True)
    allowed: tuple[str, ...] = key(allowed_texts, required=True)


@dataclass(frozen=True, kw_only=True)
class RequiredArgs(_Record):
    """Every call to ``tool`` carries each of ``args`` (dotted paths), and none is empty."""

    tool: str = key(text, required=True)
    args: tuple[str, ...] = key(names, required=True)


@dataclass(frozen=True, kw_only=True)
class Confirmation(_Record):
    """Each call to ``tools`` needs an earlier successful ``by`` call (for the same
    ``same_arg`` value, if set), or ``faultgate.confirmed = true`` on its own span."""

    tools: frozenset[str] = key(tool_set, required=True)
    by: str = key(text, required=True)
    same_arg: str | None = key(text, default=None)


def _predicate(where: str, d: Any, problems: list[str]) -> Any:
    """One ``result`` predicate: a ``path`` and exactly one operator."""
    if not isinstance(d, Mapping):
        return _bad(problems, where, "must be an object")
    before = len(problems)
    if not isinstance(d.get("path"), str) or not d["path"]:
        _bad(problems, where, "needs a 'path' (a dotted path into the JSON result)")
    unknown = [k for k in d if k not in ("path", *PREDICATE_OPS)]
    if unknown:
        _bad(problems, where, f"has unknown keys {sorted(unknown, key=str)}")
    ops = [k for k in PREDICATE_OPS if k in d]
    if len(ops) != 1:
        _bad(problems, where, f"needs exactly one of {', '.join(PREDICATE_OPS)}")
    elif ops[0] in ("in", "not_in") and not isinstance(d[ops[0]], list):
        _bad(problems, f"{where}.{ops[0]}", "must be a list")
    elif ops[0] == "exists" and not isinstance(d["exists"], bool):
        _bad(problems, f"{where}.exists", "must be true or false")
    if len(problems) > before:
        return _INVALID
    op = ops[0]
    return Predicate(path=d["path"], op=op, value=tuple(d[op]) if op in ("in", "not_in") else d[op])


# --- the policy ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Policy:
    """What the agent was allowed to do: FAULTLINE P16's runtime policy, applied to runs.

    ``Policy()`` is the policy without a file: the default deny patterns only. Every other
    key is off until set. Build one from a file with ``load_policy`` or from a decoded
    document with ``Policy.from_mapping``; both validate the whole document first."""

    allow: frozenset[str] | None = key(tool_set, default=None)
    deny_patterns: tuple[str, ...] = key(patterns, default=DEFAULT_DENY_PATTERNS)
    # a whole number (faultgate's), or windowed budgets (``CallWindow``s): see ``run_max_calls``
    max_calls: int | tuple[CallWindow, ...] | None = key(call_budget, default=None)
    max_arg_chars: int | None = key(count_or_null, default=None)
    limits: tuple[Limit, ...] = key(records(Limit), default=())
    identity: Identity | None = key(record(Identity), default=None)
    requires: tuple[Requirement, ...] = key(records(Requirement), default=())
    max_calls_per_arg: tuple[PerValueBudget, ...] = key(records(PerValueBudget), default=())
    values: tuple[AllowedValues, ...] = key(records(AllowedValues), default=())
    required_args: tuple[RequiredArgs, ...] = key(records(RequiredArgs), default=())
    confirmation: Confirmation | None = key(record(Confirmation), default=None)
    require_complete: bool = key(flag, default=False)

    @classmethod
    def from_mapping(cls, raw: Any, source: str | Path | None = None) -> "Policy":
        """The policy a decoded JSON or YAML document describes. Raises ``PolicyError``."""
        if not isinstance(raw, Mapping):
            raise PolicyError([f"policy: must be an object of policy keys, not {type(raw).__name__}"], source)
        problems: list[str] = []
        declared = {f.name: f for f in fields(cls)}
        unknown = [k for k in raw if k not in declared]
        if unknown:
            problems.append(f"policy: unknown keys {sorted(unknown, key=str)}")
        values = {n: f.metadata["kind"](n, raw[n], problems) for n, f in declared.items() if n in raw}
        if problems:
            raise PolicyError(problems, source)
        return cls(**values)

    @property
    def run_max_calls(self) -> int | None:
        """faultgate's ``max_calls``: the most tool calls in one run (windowed ones aside)."""
        return self.max_calls if isinstance(self.max_calls, int) else None

    @property
    def per_call_limits(self) -> tuple[Limit, ...]:
        """``limits`` on one call's value (faultgate's); running totals are ``windows``."""
        return tuple(lim for lim in self.limits if not lim.sum)

    @property
    def windows(self) -> tuple[CallWindow | Limit, ...]:
        """The budgets counted across calls in a window, session or agent, in policy
        order: windowed ``max_calls``, then ``limits`` with ``sum``."""
        calls = self.max_calls if isinstance(self.max_calls, tuple) else ()
        return (*calls, *(lim for lim in self.limits if lim.sum))

    @property
    def only_defaults(self) -> bool:
        """Nothing but deny patterns to check: the policy of a run with no policy file."""
        return self == Policy(deny_patterns=self.deny_patterns)

    @property
    def alternatives(self) -> Mapping[str, frozenset[str]]:
        """Tool -> the other tools that stand in for it: those named with it in one
        ``requires[].after`` list, where any one of them satisfies the prerequisite (two
        ways to authenticate). For checks that ask whether a failed call was made good."""
        out: dict[str, set[str]] = {}
        for req in self.requires:
            group = set(req.after)
            if len(group) > 1:
                for t in group:
                    out.setdefault(t, set()).update(group - {t})
        return {t: frozenset(v) for t, v in out.items()}


def load_policy(path: str | Path) -> Policy:
    """The policy in a ``.json`` file, or a YAML file (any other name). An empty YAML file
    is the policy without a file. Raises ``InputError`` (``PolicyError`` for a document
    that reads but is not a valid policy)."""
    p = Path(path)
    raw = load_document(p)
    return Policy.from_mapping({} if raw is None else raw, p)
