"""The ``policy`` check: every violation of the policy across the run's tool calls, by step.

Without a policy file only the default ``deny_patterns`` apply. The verdict lists the
reasons in faultgate 0.4.1's order, so the two tools' reports read alike: for each step,
allowlist, denied pattern, argument size, then the business rules (limits, identity,
values, requires, required_args, confirmation); then the per-value budgets, the
incomplete run (``require_complete``), the call budget (``max_calls``), then the windowed
budgets (``windows``: counted over a time window, a session or an agent).

Early findings. ``observe`` reports, when a call arrives, what that call alone decides:
an unlisted tool, a denied pattern, oversized arguments, an argument out of its limits, a
disallowed value, a missing required argument, an identity mismatch (once the run's root
has been observed; before, the verdict decides), and the call that takes the run past
``max_calls``. It also reports a missing prerequisite or confirmation when no matching
earlier call has been observed yet: a call that started earlier may arrive later, so that
finding is provisional (it says so) and the verdict decides. The verdict is computed in
``finish`` over ``run.steps`` in start order, so the order spans arrived in cannot
change it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from faultgate_stream import _native
from faultgate_stream.checks.base import Check
from faultgate_stream.checks.policy.complete import incomplete
from faultgate_stream.checks.policy.deny_patterns import DenyPatterns
from faultgate_stream.checks.policy.facts import CONFIRMED_ATTR, UNKNOWN, Call, Calls
from faultgate_stream.checks.signals import step_errors
from faultgate_stream.model.ancestry import NearestAgent
from faultgate_stream.model.records import MISSING_TOOL_ARGUMENTS, SpanRecord
from faultgate_stream.model.run import Run
from faultgate_stream.model.unread import STEPS
from faultgate_stream.model.verdict import CheckResult

if TYPE_CHECKING:
    from faultgate_stream.checks.policy.rule import CallRule
    from faultgate_stream.checks.policy.schema import Policy
    from faultgate_stream.checks.window_store import WindowStore

# Appended to an early finding that depends on calls observed so far.
PROVISIONAL = " [none observed so far; the run's verdict decides]"
# Provisional findings of history rules re-read every call observed so far, so each
# arrival costs the run's size: past this many calls kept for them, a run's arrivals are
# no longer judged early by those rules (the verdict judges every call, in linear time),
# which keeps a run's early work linear in its size (issue 9, defect 12).
EARLY_HISTORY_LIMIT = 500


class _Arrival(NamedTuple):
    """A call as it arrived: sorted like ``Run.steps`` (start, tool span first, span, place)."""

    order: tuple[int, int, str, int]
    tool: str
    arguments: str
    result: str | None  # None: a message call, whose result comes in a later span's messages
    call_id: str
    span: SpanRecord


class _Seen:
    """What ``observe`` has seen of one trace: per-run state, never shared."""

    __slots__ = ("deny", "done", "count", "call_ids", "agents", "history", "responses")

    def __init__(self) -> None:
        # argument text -> the first denied pattern it matches: what ``observe`` found, so
        # ``finish`` does not run every pattern over the same arguments again
        self.deny: dict[str, str | None] = {}
        self.done = False  # an early finding was reported: the evaluator keeps only the first
        self.count = 0     # distinct calls seen, for max_calls
        self.call_ids: set[str] = set()
        self.agents = NearestAgent()                  # span -> its nearest agent span, to find a call's root
        self.history: dict[tuple, _Arrival] = {}      # calls that requires / confirmation read
        self.responses: dict[str, str] = {}           # call id -> result, from message parts


class PolicyCheck(Check):
    name = "policy"
    reads = (STEPS,)
    fires_on_evidence = True
    description = ("A tool call broke the policy: unlisted tool, denied argument pattern, oversized argument, "
                   "call budget, argument limit, identity mismatch, missing prerequisite, per-value budget, "
                   "value not allowed, missing required argument, missing confirmation, or (with "
                   "require_complete) an incomplete run.")

    def __init__(self, policy: Policy | None = None, *, store: WindowStore | None = None,
                 namespace: str = "") -> None:
        """``store`` keeps other runs' counts for windowed budgets per session or agent
        (one is made when none is given); ``namespace`` keeps this check's counts apart
        from another policy's in the same store."""
        self._policy = policy
        if policy is None:
            # Policy(): the default deny patterns alone, set up without the policy schema
            # and the rules' modules, which a run without a policy file never uses (the
            # offline command's start-up; tests/checks/test_policy.py holds the two equal)
            self.deny = DenyPatterns()
            self._allow = self._size = self._budgets = self._windows = None
            self._rules: tuple[CallRule, ...] = ()
            self._deny_only, self._reads, self._roots = True, frozenset(), False
            self._compiled_deny_only()
            return
        from faultgate_stream.checks.policy.allow import Allow
        from faultgate_stream.checks.policy.arguments import Limits, MaxArgChars, Required, Values
        from faultgate_stream.checks.policy.budgets import PerValueBudgets
        from faultgate_stream.checks.policy.confirmation import ConfirmationRule
        from faultgate_stream.checks.policy.identity import IdentityRule
        from faultgate_stream.checks.policy.requires import Requires
        from faultgate_stream.checks.policy.windows import WindowedBudgets

        p = policy
        self.deny = DenyPatterns(p.deny_patterns)  # compiled once, here
        self._allow = Allow(p.allow) if p.allow is not None else None
        self._size = MaxArgChars(p.max_arg_chars) if p.max_arg_chars is not None else None
        rules: list[CallRule] = []  # per-call business rules, in faultgate's order
        if p.per_call_limits:
            rules.append(Limits(p.per_call_limits))
        if p.identity is not None:
            rules.append(IdentityRule(p.identity))
        if p.values:
            rules.append(Values(p.values))
        if p.requires:
            rules.append(Requires(p.requires))
        if p.required_args:
            rules.append(Required(p.required_args))
        if p.confirmation is not None:
            rules.append(ConfirmationRule(p.confirmation))
        self._rules = tuple(rules)
        self._budgets = PerValueBudgets(p.max_calls_per_arg) if p.max_calls_per_arg else None
        self._windows = WindowedBudgets(p.windows, store, namespace) if p.windows else None
        self._deny_only = p.only_defaults
        if self._deny_only:
            self._compiled_deny_only()
        # tools whose calls a history rule reads, kept as they arrive
        self._reads = frozenset(t for r in rules if r.history for t in r.reads)  # type: ignore[attr-defined]
        self._roots = p.identity is not None  # observe tracks ancestry to find a call's root
        from faultgate_stream.checks.policy.windows import SESSION_ATTRS
        self.attributes = frozenset([*([p.identity.session_attr] if p.identity is not None else ()),
                                     *([CONFIRMED_ATTR] if p.confirmation is not None else ()),
                                     *(SESSION_ATTRS if p.windows else ())])

    def _compiled_deny_only(self) -> None:
        """Deny patterns alone (no policy file, or one with nothing else): the check is
        compiled (native/core/src/checks/policy_deny.rs) around ``DenyPatterns.first_match``,
        which stays RE2's. ``observe`` and ``observe_spans`` are the compiled functions
        themselves, set on the instance, so an arriving span costs no Python frame."""
        self._native = _native.DenyOnly(self.deny, _native.Outcomes(CheckResult, self.name, self.severity, self.kind))
        self.observe = _native.deny_only_observe  # type: ignore[method-assign]
        self.observe_spans = _native.deny_only_observe_spans  # type: ignore[method-assign]

    @property
    def policy(self) -> Policy:
        if self._policy is None:
            from faultgate_stream.checks.policy.schema import Policy

            self._policy = Policy()
        return self._policy

    # --- early -----------------------------------------------------------------------

    def start(self) -> Any:
        return self._native.start() if self._deny_only else _Seen()

    def _first_match(self, seen: dict[str, str | None], arguments: str) -> str | None:
        if arguments in seen:
            return seen[arguments]
        pattern = seen[arguments] = self.deny.first_match(arguments)
        return pattern

    def observe(self, state: _Seen, span: SpanRecord) -> str | None:
        if state.done:
            return None
        if self._roots:
            state.agents.add(span.span_id, span.parent_id, span if span.is_agent else None)
        if self._reads:
            for cid, res in span.responses:
                state.responses[cid] = res
        if span.tool is None and not span.calls:
            return None
        arrivals = []
        if span.tool is not None:
            t = span.tool
            arrivals.append(_Arrival((span.start_ns, 0, span.span_id, 0), t.name, t.arguments, t.result, t.call_id,
                                     span))
        for n, c in enumerate(span.calls):
            arrivals.append(_Arrival((span.start_ns, 1, span.span_id, n), c.name, c.arguments, None, c.call_id, span))
        root = self._root_of(state, span) if self._roots else UNKNOWN
        for a in arrivals:
            reason = self._early(state, a, root)
            if reason:
                state.done = True
                return reason
        return None

    def _root_of(self, state: _Seen, span: SpanRecord) -> Any:
        """The root of the run the span belongs to, if observed and certain: its nearest
        agent ancestor when that agent has no parent (so it is the top-most agent, and the
        root of every view of the run). ``UNKNOWN`` otherwise."""
        agent = state.agents.nearest(span.span_id)
        return agent if agent is not None and agent.parent_id is None else UNKNOWN

    def _call(self, state: _Seen, a: _Arrival) -> Call:
        result = a.result if a.result is not None else state.responses.get(a.call_id, "") if a.call_id else ""
        return Call(f"span {a.span.span_id}", a.tool, a.arguments, result, a.span)

    def _early(self, state: _Seen, a: _Arrival, root: Any) -> str | None:
        call = self._call(state, a)
        if self._allow is not None and (r := self._allow.check(call)):
            return r
        pattern = self._first_match(state.deny, call.arguments)
        if pattern:
            return f"{call.where}: argument matches denied pattern {pattern!r}"
        if self._size is not None and (r := self._size.check(call)):
            return r
        # OpenInference model spans repeat calls their tool spans ran: not steps when the
        # run has tool spans, so they neither count nor serve as earlier calls
        mirrored = a.result is None and a.span.calls_shadowed_by_tool_spans
        single = Calls([call], root)
        for rule in self._rules:
            if rule.tools is not None and call.tool not in rule.tools:
                continue
            if rule.history:
                if len(state.history) > EARLY_HISTORY_LIMIT:
                    continue
                ctx = self._so_far(state, a, call, root)
                reasons = [r + PROVISIONAL for r in rule.check(ctx, len(ctx.calls) - 1)]
            else:
                reasons = rule.check(single, 0)
            if reasons:
                return reasons[0]
        if not mirrored and a.tool in self._reads:
            key = ("id", a.call_id) if a.call_id else ("at", a.order)
            if a.result is not None:
                state.history[key] = a  # a tool span's record wins over its message call's
            else:
                state.history.setdefault(key, a)
        # Counted per trace, as observe's state is: in the rare trace with two top-level
        # agents (two runs), their calls add up here, and only the verdict counts per run.
        limit = self.policy.run_max_calls
        if limit is not None and not mirrored:
            from faultgate_stream.checks.policy.budgets import max_calls_reason

            if not a.call_id or a.call_id not in state.call_ids:
                state.call_ids.add(a.call_id)
                state.count += 1
                if state.count > limit:
                    return f"span {a.span.span_id}: {max_calls_reason(state.count, limit)}"
        return None

    def _so_far(self, state: _Seen, a: _Arrival, call: Call, root: Any) -> Calls:
        """The calls observed so far that started before ``a``, then ``a``'s own call."""
        before = sorted((h for h in state.history.values()
                         if h.order < a.order and not (a.call_id and h.call_id == a.call_id)),
                        key=lambda h: h.order)
        return Calls([*(self._call(state, h) for h in before), call], root)

    # --- verdict ---------------------------------------------------------------------

    def finish(self, state: _Seen | None, run: Run) -> CheckResult:
        if self._deny_only:
            return _native.deny_only_finish(self._native, state, run)
        memo = state.deny if state is not None else {}
        steps = run.steps
        bad, window_gap = self._violations(memo, run)
        if bad:
            return self.result(True, "; ".join(bad))
        gap = run.steps_not_captured(MISSING_TOOL_ARGUMENTS)
        if gap:
            return self.undecided(gap)
        if window_gap:
            return self.undecided(window_gap)
        return self.result(False, f"{len(steps)} calls within policy")

    def _violations(self, memo: dict[str, str | None], run: Run) -> tuple[list[str], str]:
        steps = run.steps
        errors = step_errors(run)  # shared with other checks through run.derived
        spans: dict[str, SpanRecord] = {}
        for s in run.spans:
            spans.setdefault(s.span_id, s)
        calls = [Call(f"step {st.index}", st.tool, st.arguments, st.result, spans.get(st.span_id), errors[k])
                 for k, st in enumerate(steps)]
        ctx = Calls(calls, run.root)
        bad: list[str] = []
        for i, c in enumerate(calls):
            if self._allow is not None and (r := self._allow.check(c)):
                bad.append(r)
            pattern = self._first_match(memo, c.arguments)
            if pattern:
                bad.append(f"{c.where}: argument matches denied pattern {pattern!r}")
            if self._size is not None and (r := self._size.check(c)):
                bad.append(r)
            for rule in self._rules:
                if rule.tools is None or c.tool in rule.tools:
                    bad += rule.check(ctx, i)
        if self._budgets is not None:
            bad += self._budgets.check(ctx, [st.index for st in steps])
        if self.policy.require_complete:
            bad += incomplete(run)
        limit = self.policy.run_max_calls
        if limit is not None and len(steps) > limit:
            from faultgate_stream.checks.policy.budgets import max_calls_reason

            bad.append(max_calls_reason(len(steps), limit))
        gap = ""
        if self._windows is not None:
            over, gap = self._windows.check(ctx, steps, run)
            bad += over
        return bad, gap
