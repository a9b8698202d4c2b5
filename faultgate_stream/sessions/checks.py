"""The session checks: each reads the session's runs in start order and gives one result.

A check that cannot see its input says undecided, never passed: a token budget with runs
that recorded no tokens (unless the runs that did are already over it), a repeated task
when no run's request was captured, a monotonic attribute no run carried.
"""
from __future__ import annotations

from typing import NamedTuple

from faultgate_stream.model.records import RunKey
from faultgate_stream.model.verdict import CheckResult, Severity

TOKEN_BUDGET, COST_BUDGET = "session.token_budget", "session.cost_budget"
AGENT_TOKEN_BUDGET, AGENT_COST_BUDGET = "session.agent_token_budget", "session.agent_cost_budget"
REPEATED_TASK, MONOTONIC = "session.repeated_task", "session.monotonic"
KIND = "session"


class SessionRun(NamedTuple):
    """What a session keeps of one of its runs (from its verdict and profile)."""

    key: RunKey
    first_start_ns: int
    last_end_ns: int
    tokens: float | None
    cost_usd: float | None
    task: str
    answered: bool
    attrs: tuple[tuple[str, float], ...]


def _num(x: float) -> str:
    return f"{x:.12g}"


def _result(check: str, fired: bool, reason: str, severity: Severity, undecided: bool = False) -> CheckResult:
    return CheckResult(check, fired, 1.0 if fired else (0.0 if undecided else 1.0), reason, severity, KIND,
                       undecided=undecided)


def total(runs: list[SessionRun], measure: str) -> tuple[float | None, int]:
    """(the sum over the runs that recorded ``measure``, or None if none did; runs that did not)."""
    values = [getattr(r, measure) for r in runs]
    known = [v for v in values if v is not None]
    return (sum(known) if known else None), len(values) - len(known)


def budget(check: str, runs: list[SessionRun], measure: str, limit: float, what: str) -> CheckResult:
    """The session's total ``measure`` against ``limit``."""
    used, unrecorded = total(runs, measure)
    unit = "tokens" if measure == "tokens" else "USD"
    if used is not None and used > limit:
        return _result(check, True, f"{what} used {_num(used)} {unit} over {len(runs)} run(s) > max {_num(limit)}"
                       + (f" ({unrecorded} run(s) recorded none)" if unrecorded else ""), Severity.SOFT)
    if unrecorded:
        return _result(check, False, f"cannot check {what}'s {unit}: {unrecorded} of {len(runs)} run(s) recorded "
                       f"none", Severity.SOFT, undecided=True)
    return _result(check, False, f"{what} used {_num(used or 0)} {unit} <= max {_num(limit)}", Severity.SOFT)


def agent_budget(check: str, agent: str, used: float | None, limit: float, window_s: float, measure: str,
                 unrecorded: int) -> CheckResult:
    """Every session of ``agent`` closed within the window (this one included) against ``limit``."""
    unit = "tokens" if measure == "tokens" else "USD"
    where = f"agent {agent!r} within {_num(window_s)}s"
    if used is not None and used > limit:
        return _result(check, True, f"{where} used {_num(used)} {unit} > max {_num(limit)}", Severity.SOFT)
    if unrecorded:
        return _result(check, False, f"cannot check {where}'s {unit}: this session has {unrecorded} run(s) that "
                       f"recorded none", Severity.SOFT, undecided=True)
    return _result(check, False, f"{where} used {_num(used or 0)} {unit} <= max {_num(limit)}", Severity.SOFT)


def repeated_task(runs: list[SessionRun]) -> CheckResult:
    """A run that asks what an earlier run of the session asked, after that run answered:
    the user asked again, so the answer did not serve them. (An earlier run that gave no
    answer was cut short; asking again then is a retry, not a complaint.)"""
    seen = [r for r in runs if r.task]
    if not seen and runs:
        return _result(REPEATED_TASK, False, f"cannot check repeated requests: no request captured in {len(runs)} "
                       f"run(s)", Severity.SOFT, undecided=True)
    answered: dict[str, int] = {}
    for i, r in enumerate(runs, 1):
        if not r.task:
            continue
        first = answered.get(r.task)
        if first is not None:
            return _result(REPEATED_TASK, True, f"run {i} ({r.key.trace_id}) asked again what run {first} "
                           f"({runs[first - 1].key.trace_id}) had answered", Severity.SOFT)
        if r.answered:
            answered.setdefault(r.task, i)
    return _result(REPEATED_TASK, False, f"no request asked again after an answer in {len(runs)} run(s)", Severity.SOFT)


def monotonic(runs: list[SessionRun], names: tuple[str, ...]) -> CheckResult:
    """Each of ``names`` never goes down from one run that carries it to the next."""
    carried = 0
    for name in names:
        last: tuple[int, float] | None = None
        for i, r in enumerate(runs, 1):
            value = dict(r.attrs).get(name)
            if value is None:
                continue
            carried += 1
            if last is not None and value < last[1]:
                return _result(MONOTONIC, True, f"{name} went down from {_num(last[1])} (run {last[0]}) to "
                               f"{_num(value)} (run {i}, {r.key.trace_id})", Severity.HARD)
            last = (i, value)
    if not carried:
        return _result(MONOTONIC, False, f"cannot check {', '.join(names)}: no run carried it", Severity.HARD,
                       undecided=True)
    return _result(MONOTONIC, False, f"{', '.join(names)} never went down over {len(runs)} run(s)", Severity.HARD)
