"""Rules as checks: a rules file is one check of a ruleset (``RulesCheck``), whose results
are its rules', each reported as its own check (``members``).

A span rule is told of each stretch of spans as it arrives and fires early on the first
span it matches (the span is decided, nothing later undoes it); at the verdict it looks at
the run's spans it was not told of (all of them offline) and fires when any span matched.
A run rule is decided at the verdict. All the span rules of a file are evaluated over a
batch of spans in one call to the compiled evaluator (``_native.SpanRules``; ``engine.py``
says why), and as each trace's stretch arrives the file's check looks for all of them,
keeping what they saw of the trace once. The run rules likewise, once per run
(``Run.derived``), and once for runs alike in what they read.

A rule whose expression fails on a span (a missing key: ``span.args.amount`` on a call
without one) and matches nowhere else is undecided, naming the error and the span: it
could not tell. Guard with ``has(span.args.amount)`` where a field may be absent.
"""
from __future__ import annotations

import operator
from bisect import bisect_left
from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.plugins.adapt import RUN_FIELDS, STEP_FIELDS, STEP_PLAIN, PlainRun, PlainSpans, plain_args
from faultgate_stream.checks.rules.load import Rule, RulesFile
from faultgate_stream.model.records import MISSING_TOOL_ARGUMENTS, MISSING_TOOL_RESULT, SpanRecord
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import CheckResult

KIND = "rule"
_at = operator.itemgetter(0)
# Spans a fired reason names; the count says how many matched.
SHOWN_SPANS = 3


class _Found:
    """Per rule: the spans it matched and the first error, over some spans."""

    __slots__ = ("fired", "error")

    def __init__(self, fired: Any = (), error: tuple[SpanRecord, str] | None = None) -> None:
        self.fired: Any = fired
        self.error = error


_NOTHING = _Found()  # shared, never changed: most rules find nothing on most stretches


class _Batch:
    """What each rule found on one list of spans, by position in it."""

    __slots__ = ("spans", "n", "first", "last", "fired", "errors", "quiet", "found_at")

    def __init__(self, spans: Any, fired: list[list[int]], errors: list[list[tuple[int, str]]]) -> None:
        self.spans = spans  # held: its id cannot be another list's while this is kept
        self.n = len(spans)
        self.first = spans[0] if spans else None
        self.last = spans[-1] if spans else None
        self.fired = fired  # per rule, positions, ascending
        self.errors = errors
        self.quiet = [not f and not e for f, e in zip(fired, errors)]  # per rule: it found nothing
        # every position any rule found something at, ascending: most stretches hold none
        self.found_at = sorted({p for f in fired for p in f} | {p for e in errors for p, _ in e})

    def holds(self, spans: Any) -> bool:
        return (self.spans is spans and self.n == len(spans)
                and (not spans or (spans[0] is self.first and spans[-1] is self.last)))


class SpanRules:
    """A file's span rules, evaluated together over a list of spans.

    The evaluator hands each check a batch's spans a trace's stretch at a time, over the
    same list: the first stretch asked of a list has the rules evaluated over the whole list
    (one native call: each span's map built in Rust with the fields the rules that look at
    it name, ``tools`` ruling spans out before any is built, and a rule's outcome kept for
    the batch by what the fields it reads are made of: spans alike in them are asked once),
    and every stretch of it is answered from that."""

    def __init__(self, rules: tuple[Rule, ...]) -> None:
        from faultgate_stream._native import SpanRules as Native

        self.rules = rules
        self.add_ids = Native.add_ids  # each span id of spans[lo:hi] into a set, in one call
        self.native = Native([r.program.source for r in rules], sorted({p for r in rules for p in r.program.patterns}),
                             [sorted(r.tools) if r.tools is not None else None for r in rules],
                             [sorted(r.fields) for r in rules],
                             sorted(frozenset().union(*(r.attributes for r in rules))), plain_args)
        self._batch: _Batch | None = None

    def stretch(self, spans: Any, lo: int, hi: int, sh: _Shared) -> list[tuple[int, str] | None] | None:
        """Every rule on ``spans[lo:hi]``, a trace's stretch of the list (``RulesCheck.
        observe_spans``): what each found kept in ``sh``, and per rule the first
        span it matched there (its index, the reason), or None when no rule matched any."""
        b = self._batch
        if b is None or not (b.spans is spans and b.n == len(spans) and spans[0] is b.first and spans[-1] is b.last):
            b = self._batch = _Batch(spans, *self.native.evaluate(spans))
        answers = None
        at = b.found_at
        if at and (k := bisect_left(at, lo)) < len(at) and at[k] < hi:  # a rule found something in the stretch
            for i, quiet in enumerate(b.quiet):
                if quiet:
                    continue
                f = self.found(spans, lo, hi, i)
                if f.error is not None:
                    sh.fail(i, len(self.rules), f.error)
                if f.fired:
                    sh.fire(i, len(self.rules), f.fired)
                    if answers is None:
                        answers = [None] * len(self.rules)
                    first = f.fired[0]
                    answers[i] = (spans.index(first, lo, hi), SpanRuleCheck._where(self.rules[i].reason, [first]))
        return answers

    def found(self, spans: list[SpanRecord] | tuple[SpanRecord, ...], lo: int, hi: int, rule: int) -> _Found:
        """What rule ``rule`` found on ``spans[lo:hi]``: the list evaluated whole when it was
        not the last one asked."""
        b = self._batch
        if b is None or not b.holds(spans):
            b = self._batch = _Batch(spans, *self.native.evaluate(spans))
        fired, errors = b.fired[rule], b.errors[rule]
        if not fired and not errors:
            return _NOTHING
        at = [spans[p] for p in fired[bisect_left(fired, lo):bisect_left(fired, hi)]]
        error = None
        if errors:
            k = bisect_left(errors, (lo,))
            if k < len(errors) and errors[k][0] < hi:
                error = (spans[errors[k][0]], errors[k][1])
        return _Found(at, error) if at or error else _NOTHING


class RunRules:
    """A file's run rules, evaluated together on a run in one native call. The run's steps
    and calls are built into its map there, from the run's steps, when the rules read no
    step field that needs the spans (``end_ns``, ``model`` ...); the other fields they name
    are built once a run in Python (``PlainRun``) and converted. When Python builds none
    and the rules read no field unique to a run (a step's span id, call id, start), the
    steps are read off the core's own, never made Python objects (``Run.steps`` is the
    costliest of a run's facts, and the live path reads it for nothing else). Without those, runs alike in
    what the rules read of their steps share one evaluation (the native side keeps the
    outcomes by it, bounded), so the answer is a tuple: shared, never changed."""

    def __init__(self, rules: tuple[Rule, ...]) -> None:
        from faultgate_stream._native import RunRules as Native

        self.rules = rules
        fields: set[str] = set()
        everything = any(not r.fields for r in rules)
        for r in rules:
            fields |= r.fields
        self.fields = frozenset() if everything else frozenset(fields)
        spans = PlainSpans(self.fields, frozenset().union(*(r.attributes for r in rules)))
        steps = [f for f in STEP_FIELDS if f in self.fields]
        native_steps = not everything and "steps" in self.fields and all(f in STEP_PLAIN for f in steps)
        native_calls = not everything and "calls" in self.fields
        rest = self.fields - {"steps"} if native_steps else self.fields
        rest = rest - {"calls"} if native_calls else rest
        # ``PlainRun`` of no fields would build them all: nothing left for Python is None
        self.plain = PlainRun(rest, spans) if everything or rest & set(RUN_FIELDS) else None
        self.native = Native([r.program.source for r in rules], sorted({p for r in rules for p in r.program.patterns}),
                             steps if native_steps else None, native_calls,
                             (MISSING_TOOL_ARGUMENTS, MISSING_TOOL_RESULT))
        self.key = ("rules.run", id(self))

    def on(self, run: Run) -> tuple[tuple[bool, str], ...]:
        """(matched, error) per rule, worked out once per run."""
        got = run.derived.get(self.key)
        if got is None:
            plain = self.plain
            got = run.derived[self.key] = self.native.evaluate_run(run, plain(run) if plain is not None else None)
        return got


class _Shared:
    """A file's span rules on one trace (``RulesCheck``'s state): the span ids they looked
    at, and per rule the spans it matched and its first error (none until set: most rules
    match nothing)."""

    __slots__ = ("seen", "fired", "errors")

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.fired: list[Any] | None = None  # per rule, once any matched
        self.errors: list[tuple[SpanRecord, str] | None] | None = None  # per rule, once any failed

    def fire(self, rule: int, n: int, spans: Any) -> None:
        fired = self.fired
        if fired is None:
            fired = self.fired = [()] * n
        fired[rule] = [*fired[rule], *spans]

    def fail(self, rule: int, n: int, error: tuple[SpanRecord, str]) -> None:
        errors = self.errors
        if errors is None:
            errors = self.errors = [None] * n
        if errors[rule] is None:
            errors[rule] = error


class _RuleCheck(Check):
    """A rule of a rules file as the check its results name: its name, reason, severity and
    the file's digest; ``index`` its place among the file's rules of its level (``together``
    evaluates them all). The file's ``RulesCheck`` looks and judges for it."""

    kind = KIND

    def __init__(self, rule: Rule, index: int, together: Any, file: RulesFile, whole: RulesCheck, at: int) -> None:
        self.rule = rule
        self.name = rule.name  # type: ignore[misc]
        self.description = rule.description or rule.reason  # type: ignore[misc]
        self.severity = rule.severity  # type: ignore[misc]
        self.attributes = rule.attributes
        self.digest = file.digest
        self._i = index
        self._together = together
        self._whole = whole
        self._at = at  # its place in the file: where its result is among the file's
        # the result most runs get, built once (a result is immutable)
        self._passed = CheckResult(self.name, False, 1.0, "no span matched" if rule.level == "span" else "not matched",
                                   self.severity, KIND)

    def finish(self, state: Any, run: Run) -> CheckResult:
        """This rule's result judged on its own: the file's, from every span of ``run``."""
        whole = self._whole
        return whole.finish(whole.start(), run)[self._at]


class SpanRuleCheck(_RuleCheck):
    _together: SpanRules
    # it fires on a span it matched: evidence, which stands beside a run's unread work (a
    # run rule may fire on an absence, "never consulted the retriever", and does not)
    fires_on_evidence = True

    def _judge(self, fired_before: Any, error_before: tuple[SpanRecord, str] | None, seen: set[str],
               run: Run) -> CheckResult:
        """This rule's result on ``run``: what it found on the spans ``seen`` (observed as
        they arrived) and on the run's other spans, evaluated now."""
        members = run.span_ids
        if not fired_before and error_before is None and seen and members <= seen:
            return self._passed  # live, the usual case: every span seen as it arrived, none matched
        new_fired, new_error = self._unseen(seen, run)
        return self._result(fired_before, error_before, new_fired, new_error, members)

    def _unseen(self, seen: set[str], run: Run) -> tuple[Any, tuple[SpanRecord, str] | None]:
        """What this rule finds on the run's spans not in ``seen`` (all of them offline),
        evaluated once a run for all the file's span rules."""
        if not seen:
            todo: Any = run.spans
        elif run.span_ids <= seen:  # live: every span was looked at as it arrived
            return (), None
        else:
            todo = [s for s in run.spans if s.span_id not in seen]
        if not todo:
            return (), None
        key = ("rules.span", id(self._together))
        memo = run.derived.get(key)
        if memo is None or memo[0] != len(todo):
            together = self._together
            memo = run.derived[key] = (len(todo), [together.found(todo, 0, len(todo), i)
                                                   for i in range(len(together.rules))])
        f = memo[1][self._i]
        return f.fired, f.error

    def _result(self, fired_before: Any, error_before: tuple[SpanRecord, str] | None, new_fired: Any,
                new_error: tuple[SpanRecord, str] | None, members: Any) -> CheckResult:
        fired = sorted({s.span_id: s for s in [*fired_before, *new_fired] if s.span_id in members}.values(),
                       key=lambda s: (s.start_ns, s.span_id)) if fired_before or new_fired else ()
        if fired:
            return CheckResult(self.name, True, 1.0, self._where(self.rule.reason, fired), self.severity, KIND,
                               span_ids=tuple(s.span_id for s in fired))
        error = error_before if error_before is not None and error_before[0].span_id in members else new_error
        if error is not None:
            s, why = error
            return CheckResult(self.name, False, 0.0, f"undecided: the rule could not be evaluated on span "
                               f"{s.name!r} ({s.span_id}): {why}", self.severity, KIND, undecided=True,
                               span_ids=(s.span_id,))
        return self._passed

    @staticmethod
    def _where(reason: str, spans: list[SpanRecord]) -> str:
        shown = ", ".join(f"{s.name!r} ({s.span_id})" for s in spans[:SHOWN_SPANS])
        more = f" and {len(spans) - SHOWN_SPANS} more" if len(spans) > SHOWN_SPANS else ""
        return f"{reason}: span {shown}{more}" if len(spans) == 1 else f"{reason}: {len(spans)} spans, {shown}{more}"


class RunRuleCheck(_RuleCheck):
    _together: RunRules

    def outcome(self, matched: bool, error: str) -> CheckResult:
        """The result of a (matched, error) the file's run rules gave for this one."""
        if matched:
            return CheckResult(self.name, True, 1.0, self.rule.reason, self.severity, KIND)
        if error:
            return CheckResult(self.name, False, 0.0, f"undecided: the rule could not be evaluated on the run: "
                               f"{error}", self.severity, KIND, undecided=True)
        return self._passed


# Run rules' results kept by the outcomes they come of (runs mostly share a few): at most so
# many, emptied when full.
MAX_KEPT_OUTCOMES = 1024


class RulesCheck(Check):
    """A rules file as one check of a ruleset, whose results are its rules' (``members``,
    one check each, in the file's order): what each rule costs is its share of one state a
    trace, one look a stretch and one call at the verdict, where each rule looking and judging
    on its own was ~60 bytecodes a run each. Its span rules look at a trace's stretch
    together (``observe_spans``: each one's first finding, as its own check's), and every
    rule's result comes of one ``finish``: a list, which the evaluator takes as the members'
    results."""

    kind = KIND

    def __init__(self, file: RulesFile) -> None:
        span = tuple(r for r in file.rules if r.level == "span")
        run = tuple(r for r in file.rules if r.level == "run")
        self._span = SpanRules(span) if span else None
        self._run = RunRules(run) if run else None
        members: list[_RuleCheck] = []
        si = ri = 0
        for at, r in enumerate(file.rules):
            if r.level == "span":
                members.append(SpanRuleCheck(r, si, self._span, file, self, at))
                si += 1
            else:
                members.append(RunRuleCheck(r, ri, self._run, file, self, at))
                ri += 1
        self.members = tuple(members)  # type: ignore[misc]
        self.name = f"rules {file.path}"  # type: ignore[misc]  # a log's, never a result's: those are the rules'
        self.description = f"the rules of {file.path}"  # type: ignore[misc]
        self.digest = file.digest
        self.attributes = frozenset().union(*(r.attributes for r in file.rules))
        self.observers = tuple(c for c in members if isinstance(c, SpanRuleCheck))
        self._run_checks = tuple(c for c in members if isinstance(c, RunRuleCheck))
        # ``finish`` makes the span rules' results, then the run rules': where each goes in
        # the file's order (None: already in it)
        made = [c._at for c in (*self.observers, *self._run_checks)]
        self._order = None if made == list(range(len(members))) else tuple(made.index(k) for k in range(len(made)))
        # a list: the evaluator takes a list from ``finish`` as several results (never changed)
        self._passed = [c._passed for c in members]
        self._span_passed = [c._passed for c in self.observers]
        self._run_passed = tuple(c._passed for c in self._run_checks)
        self._run_results: dict[tuple, tuple[CheckResult, ...]] = {}

    def start(self) -> _Shared | None:
        return _Shared() if self._span is not None else None

    def observe_spans(self, state: _Shared | None, spans: Any, lo: int, hi: int) -> list[tuple] | None:  # type: ignore[override]
        """Every span rule on ``spans[lo:hi]``: None, or each one's first finding there as
        (index, reason, the rule's check, ""), by span, then in the file's order. (No
        ``observe``: a run replayed span by span is judged whole by ``finish``, from every
        span it was not told of, as offline.)"""
        span = self._span
        if span is None:
            return None
        answers = span.stretch(spans, lo, hi, state)  # type: ignore[arg-type]
        # seen once looked at: a stretch whose look raised is judged again at the verdict
        span.add_ids(state.seen, spans, lo, hi)  # type: ignore[union-attr]
        if answers is None:
            return None
        found = [(a[0], a[1], c, "") for a, c in zip(answers, self.observers) if a is not None]
        found.sort(key=_at)  # stable: at one span, the rules in the file's order
        return found

    def finish(self, state: _Shared | None, run: Run) -> list[CheckResult]:  # type: ignore[override]
        """Every rule's result on ``run``, in the file's order."""
        spans = self._span_passed
        if state is not None:
            seen, fired, errors = state.seen, state.fired, state.errors
            if fired is not None or errors is not None or not seen or not run.span_ids <= seen:
                spans = [c._judge(fired[i] if fired else (), errors[i] if errors else None, seen, run)
                         for i, c in enumerate(self.observers)]
            # else live, the usual case: all seen as they arrived, none matched
        runs = self._run_passed
        together = self._run
        if together is not None:
            got = run.derived.get(together.key)
            if got is None:
                got = together.on(run)
            runs = self._run_results.get(got)  # type: ignore[assignment]
            if runs is None:
                kept = self._run_results
                if len(kept) >= MAX_KEPT_OUTCOMES:
                    kept.clear()
                runs = kept[got] = tuple(c.outcome(*o) for c, o in zip(self._run_checks, got))
        if spans is self._span_passed and runs is self._run_passed:
            return self._passed  # the usual run: no rule matched
        made = [*spans, *runs]
        order = self._order
        return made if order is None else [made[k] for k in order]


def rule_checks(file: RulesFile) -> list[Check]:
    """The checks a ruleset holds for ``file``: one, ``RulesCheck``, whose members are its
    rules, one check each."""
    return [RulesCheck(file)]
