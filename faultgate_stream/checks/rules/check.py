"""Rules as checks: one check per rule, every rule of a file evaluated together.

A span rule is told of each stretch of spans as it arrives and fires early on the first
span it matches (the span is decided, nothing later undoes it); at the verdict it looks at
the run's spans it was not told of (all of them offline) and fires when any span matched.
A run rule is decided at the verdict. All the span rules of a file are one CEL program over
a batch of spans (``engine.py`` says why), worked out once for the first of them that asks,
and the others read the answer; the run rules likewise, once per run (``Run.derived``).

A rule whose expression fails on a span (a missing key: ``span.args.amount`` on a call
without one) and matches nowhere else is undecided, naming the error and the span: it
could not tell. Guard with ``has(span.args.amount)`` where a field may be absent.
"""
from __future__ import annotations

import json
import operator
from bisect import bisect_left
from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.rules.load import Rule, RulesFile, span_maps
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import CheckResult

KIND = "rule"
_span_id = operator.attrgetter("span_id")
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

    __slots__ = ("spans", "n", "first", "last", "fired", "errors")

    def __init__(self, spans: Any, rules: int) -> None:
        self.spans = spans  # held: its id cannot be another list's while this is kept
        self.n = len(spans)
        self.first = spans[0] if spans else None
        self.last = spans[-1] if spans else None
        self.fired: list[list[int]] = [[] for _ in range(rules)]  # positions, ascending
        self.errors: list[list[tuple[int, str]]] = [[] for _ in range(rules)]

    def holds(self, spans: Any) -> bool:
        return (self.spans is spans and self.n == len(spans)
                and (not spans or (spans[0] is self.first and spans[-1] is self.last)))


class SpanRules:
    """A file's span rules, evaluated together over a list of spans.

    The evaluator hands each check a batch's spans a trace's stretch at a time, over the
    same list: the first stretch asked of a list has the rules evaluated over the whole list,
    and every stretch of it is answered from that (an evaluation's fixed cost and its
    activation paid once a batch, not once a trace). Spans whose maps are equal (most spans
    of a batch that are not tool calls: the same status, the same empty tool) share one map:
    CEL is given each distinct map once. One activation binds the maps; one program gives
    the places (``_i``) of the maps any rule matched, and only those maps are asked rule by
    rule which matched. When some rule failed on a map, that program fails too: each rule is
    then asked which maps it matched (``spans.filter`` over ``_i``) on the same activation,
    and a rule that fails there map by map, to say where. A map holds only the fields the
    rules that look at its span name (``tools``: a lookup_order span is not given the
    arguments a rule on fetch_url reads)."""

    def __init__(self, rules: tuple[Rule, ...], engine: Any) -> None:
        self.rules = rules
        self.engine = engine
        # rules with ``tools`` only see those tools' spans; a rule without sees every span
        self.every_span = any(r.tools is None for r in rules)
        self.tools = frozenset().union(*(r.tools for r in rules if r.tools))
        self.guarded = [f"(span.tool in {json.dumps(sorted(r.tools))} && ({r.when}))" if r.tools else f"({r.when})"
                        for r in rules]
        self.combined = engine.compile("spans.filter(span, " + " || ".join(self.guarded) + ").map(span, span._i)",
                                       "rules (together)", boolean=False)
        self.which = [engine.compile(f"spans.filter(span, {g}).map(span, span._i)", f"rules[{r.name}]", boolean=False)
                      for r, g in zip(rules, self.guarded)]
        self._untooled = span_maps(tuple(r for r in rules if r.tools is None)) if self.every_span else None
        self._by_tool: dict[str, Any] = {}
        self._batch: _Batch | None = None

    def _maps_for(self, tool: str) -> Any:
        """The map builder for a span of ``tool``: the fields of the rules that look at it."""
        m = self._by_tool.get(tool)
        if m is None:
            rules = tuple(r for r in self.rules if r.tools is None or tool in r.tools)
            m = span_maps(rules) if rules else None
            if len(self._by_tool) < 1024:  # tool names come from traffic: bounded
                self._by_tool[tool] = m
        return m

    def found(self, spans: list[SpanRecord] | tuple[SpanRecord, ...], lo: int, hi: int, rule: int) -> _Found:
        """What rule ``rule`` found on ``spans[lo:hi]``: the list evaluated whole when it was
        not the last one asked."""
        b = self._batch
        if b is None or not b.holds(spans):
            b = self._batch = self._evaluate(spans)
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

    def _evaluate(self, spans: Any) -> _Batch:
        batch = _Batch(spans, len(self.rules))
        where: list[list[int]] = []  # per map, the positions of the spans it stands for
        maps: list[dict] = []
        seen: dict[tuple, int] = {}
        untooled = self._untooled
        tools = self.tools
        by_tool = self._by_tool
        for pos, s in enumerate(spans):
            t = s.tool
            tool = t.name if t is not None else ""
            if tool in tools:
                build = by_tool.get(tool) or self._maps_for(tool)
            else:
                build = untooled
            if build is None:
                continue
            key = (tool, build.key(s))
            u = seen.get(key)
            if u is not None:
                where[u].append(pos)
                continue
            u = seen[key] = len(maps)
            d = build(s)
            d["tool"] = tool
            d["_i"] = u
            maps.append(d)
            where.append([pos])
        if not maps:
            return batch
        engine = self.engine
        act = engine.activation({"spans": maps})
        hits = engine.values(self.combined, act)
        if hits is not None:  # no rule failed on a map: the maps some rule matched, each asked rule by rule
            for u in hits:
                d = maps[u]
                one = engine.activation({"span": d})
                for r, fired, errors in zip(self.rules, batch.fired, batch.errors):
                    if r.tools is not None and d["tool"] not in r.tools:
                        continue
                    matched, why = engine.evaluate(r.program, one)
                    if matched:
                        fired += where[u]
                    elif why:  # it failed where another rule matched
                        errors += [(p, why) for p in where[u]]
            for fired, errors in zip(batch.fired, batch.errors):
                fired.sort()
                errors.sort()
            return batch
        for r, which, fired, errors in zip(self.rules, self.which, batch.fired, batch.errors):
            idx = engine.values(which, act)
            if idx is not None:
                for u in idx:
                    fired += where[u]
                fired.sort()
                continue
            for u, d in enumerate(maps):  # the rule failed on some map: which one, and where did it match
                if r.tools is not None and d["tool"] not in r.tools:
                    continue
                matched, why = engine.evaluate(r.program, {"span": d})
                if matched:
                    fired += where[u]
                elif why:
                    errors += [(p, why) for p in where[u]]
            fired.sort()
            errors.sort()
        return batch


class RunRules:
    """A file's run rules, evaluated together on a run: one activation, one program asking
    whether any matched; each asked alone only when one did or failed."""

    def __init__(self, rules: tuple[Rule, ...], engine: Any) -> None:
        from faultgate_stream.checks.plugins.adapt import PlainRun, PlainSpans

        self.rules = rules
        self.engine = engine
        fields: set[str] = set()
        everything = any(not r.fields for r in rules)
        for r in rules:
            fields |= r.fields
        self.fields = frozenset() if everything else frozenset(fields)
        self.spans = PlainSpans(frozenset() if everything else frozenset(fields),
                                frozenset().union(*(r.attributes for r in rules)))
        self.plain = PlainRun(self.fields, self.spans)
        self.combined = engine.compile(" || ".join(f"({r.when})" for r in rules), "rules (together)")
        self.key = ("rules.run", id(self))

    def on(self, run: Run) -> list[tuple[bool, str]]:
        """(matched, error) per rule, worked out once per run."""
        got = run.derived.get(self.key)
        if got is None:
            data = {"run": self.plain(run)}
            # no activation for the one program most runs need: building one cost more than
            # the evaluation's own binding of the data
            hit, error = self.engine.evaluate(self.combined, data)
            if not hit and not error:
                got = [(False, "")] * len(self.rules)
            else:
                act = self.engine.activation(data)
                got = [self.engine.evaluate(r.program, act) for r in self.rules]
            run.derived[self.key] = got
        return got


class _SpanState:
    __slots__ = ("seen", "fired", "error")

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.fired: list[SpanRecord] = []
        self.error: tuple[SpanRecord, str] | None = None


class _RuleCheck(Check):
    """A rule of a rules file as a check: its name, reason, severity and the file's digest;
    ``index`` its place in the file's programs (``together``), evaluated for all its rules."""

    kind = KIND

    def __init__(self, rule: Rule, index: int, together: Any, file: RulesFile) -> None:
        self.rule = rule
        self.name = rule.name  # type: ignore[misc]
        self.description = rule.description or rule.reason  # type: ignore[misc]
        self.severity = rule.severity  # type: ignore[misc]
        self.attributes = rule.attributes
        self.digest = file.digest
        self.source = file.path
        self._i = index
        self._together = together


class SpanRuleCheck(_RuleCheck):
    _together: SpanRules
    # it fires on a span it matched: evidence, which stands beside a run's unread work (a
    # run rule may fire on an absence, "never consulted the retriever", and does not)
    fires_on_evidence = True

    def start(self) -> _SpanState:
        return _SpanState()

    def observe(self, state: _SpanState, span: SpanRecord) -> str | None:
        first = self.observe_spans(state, [span], 0, 1)
        return first[1] if first else None

    def observe_spans(self, state: _SpanState, spans: Any, lo: int, hi: int) -> tuple[int, str] | None:
        f = self._together.found(spans, lo, hi, self._i)
        state.seen.update(map(_span_id, spans[lo:hi]))
        if f.error is not None and state.error is None:
            state.error = f.error
        if not f.fired:
            return None
        state.fired += f.fired
        first = f.fired[0]
        return spans.index(first, lo, hi), self._where(self.rule.reason, [first])

    def finish(self, state: _SpanState | None, run: Run) -> CheckResult:
        state = state or _SpanState()
        members = run.span_ids
        if not state.seen:
            todo: Any = run.spans
        elif members <= state.seen:  # live: every span was looked at as it arrived
            todo = ()
        else:
            todo = [s for s in run.spans if s.span_id not in state.seen]
        if todo:
            key = ("rules.span", id(self._together))
            memo = run.derived.get(key)
            if memo is None or memo[0] != len(todo):
                together = self._together
                memo = run.derived[key] = (len(todo), [together.found(todo, 0, len(todo), i)
                                                       for i in range(len(together.rules))])
            f = memo[1][self._i]
            new_fired, new_error = f.fired, f.error
        else:
            new_fired, new_error = [], None
        fired = sorted({s.span_id: s for s in [*state.fired, *new_fired] if s.span_id in members}.values(),
                       key=lambda s: (s.start_ns, s.span_id)) if state.fired or new_fired else ()
        if fired:
            return CheckResult(self.name, True, 1.0, self._where(self.rule.reason, fired), self.severity, KIND,
                               span_ids=tuple(s.span_id for s in fired))
        error = state.error if state.error is not None and state.error[0].span_id in members else new_error
        if error is not None:
            s, why = error
            return CheckResult(self.name, False, 0.0, f"undecided: the rule could not be evaluated on span "
                               f"{s.name!r} ({s.span_id}): {why}", self.severity, KIND, undecided=True,
                               span_ids=(s.span_id,))
        return CheckResult(self.name, False, 1.0, "no span matched", self.severity, KIND)

    @staticmethod
    def _where(reason: str, spans: list[SpanRecord]) -> str:
        shown = ", ".join(f"{s.name!r} ({s.span_id})" for s in spans[:SHOWN_SPANS])
        more = f" and {len(spans) - SHOWN_SPANS} more" if len(spans) > SHOWN_SPANS else ""
        return f"{reason}: span {shown}{more}" if len(spans) == 1 else f"{reason}: {len(spans)} spans, {shown}{more}"


class RunRuleCheck(_RuleCheck):
    _together: RunRules

    def finish(self, state: Any, run: Run) -> CheckResult:
        matched, error = self._together.on(run)[self._i]
        if matched:
            return CheckResult(self.name, True, 1.0, self.rule.reason, self.severity, KIND)
        if error:
            return CheckResult(self.name, False, 0.0, f"undecided: the rule could not be evaluated on the run: "
                               f"{error}", self.severity, KIND, undecided=True)
        return CheckResult(self.name, False, 1.0, "not matched", self.severity, KIND)


def rule_checks(file: RulesFile) -> list[Check]:
    """One check per rule of ``file``, in the file's order."""
    span = tuple(r for r in file.rules if r.level == "span")
    run = tuple(r for r in file.rules if r.level == "run")
    span_together = SpanRules(span, file.engine) if span else None
    run_together = RunRules(run, file.engine) if run else None
    out: list[Check] = []
    si = ri = 0
    for r in file.rules:
        if r.level == "span":
            out.append(SpanRuleCheck(r, si, span_together, file))
            si += 1
        else:
            out.append(RunRuleCheck(r, ri, run_together, file))
            ri += 1
    return out
