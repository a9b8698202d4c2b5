"""Rules as checks: one check per rule, every rule of a file evaluated together.

A span rule is told of each stretch of spans as it arrives and fires early on the first
span it matches (the span is decided, nothing later undoes it); at the verdict it looks at
the run's spans it was not told of (all of them offline) and fires when any span matched.
A run rule is decided at the verdict. All the span rules of a file are one CEL program over
a stretch (``engine.py`` says why), worked out once for the first of them that asks, and
the others read the answer; the run rules likewise, once per run (``Run.derived``).

A rule whose expression fails on a span (a missing key: ``span.args.amount`` on a call
without one) and matches nowhere else is undecided, naming the error and the span: it
could not tell. Guard with ``has(span.args.amount)`` where a field may be absent.
"""
from __future__ import annotations

import json
from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.rules.load import Rule, RulesFile, span_maps
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import CheckResult

KIND = "rule"
# Spans a fired reason names; the count says how many matched.
SHOWN_SPANS = 3


class _Found:
    """Per rule: the spans it matched and the first error, over some spans."""

    __slots__ = ("fired", "error")

    def __init__(self) -> None:
        self.fired: list[SpanRecord] = []
        self.error: tuple[SpanRecord, str] | None = None


class SpanRules:
    """A file's span rules, evaluated together over a list of spans.

    One activation per stretch binds the spans' maps once; a program that asks whether any
    rule matched any span answers most stretches (nothing matched) in one evaluation. When
    one did, or one failed, each rule is asked which spans it matched (``spans.filter``
    over the maps' ``_i``, their place), on the same activation; a rule that fails there is
    asked span by span, to say where. A span's map holds only the fields the rules that
    look at it name (``tools``: a lookup_order span is not given the arguments a rule on
    fetch_url reads)."""

    def __init__(self, rules: tuple[Rule, ...], engine: Any) -> None:
        self.rules = rules
        self.engine = engine
        # rules with ``tools`` only see those tools' spans; a rule without sees every span
        self.every_span = any(r.tools is None for r in rules)
        self.tools = frozenset().union(*(r.tools for r in rules if r.tools))
        self.guarded = [f"(span.tool in {json.dumps(sorted(r.tools))} && ({r.when}))" if r.tools else f"({r.when})"
                        for r in rules]
        self.combined = engine.compile("spans.exists(span, " + " || ".join(self.guarded) + ")", "rules (together)")
        self.which = [engine.compile(f"spans.filter(span, {g}).map(span, span._i)", f"rules[{r.name}]", boolean=False)
                      for r, g in zip(rules, self.guarded)]
        self._untooled = span_maps(tuple(r for r in rules if r.tools is None)) if self.every_span else None
        self._by_tool: dict[str, Any] = {}
        self._memo: tuple[Any, Any, int, list[_Found]] | None = None

    def _maps_for(self, tool: str) -> Any:
        """The map builder for a span of ``tool``: the fields of the rules that look at it."""
        m = self._by_tool.get(tool)
        if m is None:
            rules = tuple(r for r in self.rules if r.tools is None or tool in r.tools)
            m = span_maps(rules) if rules else None
            if len(self._by_tool) < 1024:  # tool names come from traffic: bounded
                self._by_tool[tool] = m
        return m

    def over(self, spans: list[SpanRecord] | tuple[SpanRecord, ...], lo: int, hi: int) -> list[_Found]:
        """What each rule found on ``spans[lo:hi]``; the same stretch asked again (by the
        next rule of the file) is answered from memory."""
        m = self._memo
        n = hi - lo
        if n and m is not None and m[0] is spans[lo] and m[1] is spans[hi - 1] and m[2] == n:
            return m[3]
        found = [_Found() for _ in self.rules]
        if n:
            self._evaluate(spans[lo:hi], found)
            # the first and last span are held, so their ids cannot be another stretch's
            self._memo = (spans[lo], spans[hi - 1], n, found)
        return found

    def _evaluate(self, spans: Any, found: list[_Found]) -> None:
        looked: list[SpanRecord] = []
        maps: list[dict] = []
        untooled = self._untooled
        tools = self.tools
        for s in spans:
            tool = s.tool.name if s.tool is not None else ""
            build = self._maps_for(tool) if tool in tools else untooled
            if build is None:
                continue
            d = build(s)
            d["tool"] = tool
            d["_i"] = len(maps)
            maps.append(d)
            looked.append(s)
        if not maps:
            return
        engine = self.engine
        act = engine.activation({"spans": maps})
        hit, error = engine.evaluate(self.combined, act)
        if not hit and not error:
            return  # no rule matched a span, and none failed on one
        for r, which, f in zip(self.rules, self.which, found):
            idx = engine.values(which, act)
            if idx is not None:
                f.fired = [looked[i] for i in idx]
                continue
            for s, d in zip(looked, maps):  # the rule failed on some span: which one, and did it match
                if r.tools is not None and d["tool"] not in r.tools:
                    continue
                matched, why = engine.evaluate(r.program, {"span": d})
                if matched:
                    f.fired.append(s)
                elif why and f.error is None:
                    f.error = (s, why)


class RunRules:
    """A file's run rules, evaluated together on a run: one activation, one program asking
    whether any matched; each asked alone only when one did or failed."""

    def __init__(self, rules: tuple[Rule, ...], engine: Any) -> None:
        from faultgate_stream.checks.plugins.adapt import PlainSpans

        self.rules = rules
        self.engine = engine
        fields: set[str] = set()
        everything = any(not r.fields for r in rules)
        for r in rules:
            fields |= r.fields
        self.fields = frozenset() if everything else frozenset(fields)
        self.spans = PlainSpans(frozenset() if everything else frozenset(fields),
                                frozenset().union(*(r.attributes for r in rules)))
        self.combined = engine.compile(" || ".join(f"({r.when})" for r in rules), "rules (together)")
        self.key = ("rules.run", id(self))

    def on(self, run: Run) -> list[tuple[bool, str]]:
        """(matched, error) per rule, worked out once per run."""
        got = run.derived.get(self.key)
        if got is None:
            from faultgate_stream.checks.plugins.adapt import plain_run

            act = self.engine.activation({"run": plain_run(run, self.fields, self.spans)})
            hit, error = self.engine.evaluate(self.combined, act)
            if not hit and not error:
                got = [(False, "")] * len(self.rules)
            else:
                got = [self.engine.evaluate(r.program, act) for r in self.rules]
            run.derived[self.key] = got
        return got


class _SpanState:
    __slots__ = ("seen", "fired", "error")

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.fired: list[SpanRecord] = []
        self.error: tuple[SpanRecord, str] | None = None


class SpanRuleCheck(Check):
    kind = KIND

    def __init__(self, rule: Rule, index: int, together: SpanRules, file: RulesFile) -> None:
        self.rule = rule
        self.name = rule.name  # type: ignore[misc]
        self.description = rule.description or rule.reason  # type: ignore[misc]
        self.severity = rule.severity  # type: ignore[misc]
        self.attributes = rule.attributes
        self.digest = file.digest
        self.source = file.path
        self._i = index
        self._together = together

    def start(self) -> _SpanState:
        return _SpanState()

    def observe(self, state: _SpanState, span: SpanRecord) -> str | None:
        first = self.observe_spans(state, [span], 0, 1)
        return first[1] if first else None

    def observe_spans(self, state: _SpanState, spans: Any, lo: int, hi: int) -> tuple[int, str] | None:
        f = self._together.over(spans, lo, hi)[self._i]
        seen = state.seen
        for i in range(lo, hi):
            seen.add(spans[i].span_id)
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
                memo = run.derived[key] = (len(todo), self._together.over(todo, 0, len(todo)))
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


class RunRuleCheck(Check):
    kind = KIND

    def __init__(self, rule: Rule, index: int, together: RunRules, file: RulesFile) -> None:
        self.rule = rule
        self.name = rule.name  # type: ignore[misc]
        self.description = rule.description or rule.reason  # type: ignore[misc]
        self.severity = rule.severity  # type: ignore[misc]
        self.attributes = rule.attributes
        self.digest = file.digest
        self.source = file.path
        self._i = index
        self._together = together

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
