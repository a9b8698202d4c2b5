"""Runs -> verdicts: drives every check through its incremental contract.

Per trace in flight the evaluator keeps each check's state and the ruleset the trace
started with (a reload applies to traces that start afterwards). Spans are observed as
they arrive, and an early finding is passed on at once (once per trace and check). When a
run completes, every run's checks give their verdict over its sorted steps; checks bound
to an agent judge that agent's view of the run (its nearest-agent steps), replayed in
start order, so a bound check's verdict does not depend on arrival order either.

With a store of decided runs (``amend``), a span that arrives after its run's verdict is
added to the kept run, which is evaluated again from scratch (fresh states, every span in
start order, as the first time); when that changes a check's result the run's verdict goes
out again as an amendment (``verdict/amend.py``). Judge results reach a kept run the same
way (``amend_judged``), from the judge stage's own thread: hence one lock around what goes
to the sinks, so they always hear of one verdict at a time.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from faultgate_stream._native import trace_stretches
from faultgate_stream.checks.base import Check, each
from faultgate_stream.model.ancestry import NearestAgent
from faultgate_stream.model.consumers import VerdictConsumer
from faultgate_stream.model.profile import RunProfile
from faultgate_stream.model.records import CREATE_AGENT, RunKey, SpanRecord
from faultgate_stream.model.run import AGENT_NAME, Run
from faultgate_stream.model.verdict import CheckResult, EarlyFinding, RunVerdict
from faultgate_stream.verdict.agents import agent_views
from faultgate_stream.verdict.ruleset import Ruleset

_FIRST = itemgetter(0)
_new_tuple = tuple.__new__

if TYPE_CHECKING:  # the offline command needs no metrics library, and keeps no decided runs
    from faultgate_stream.model.telemetry import Telemetry
    from faultgate_stream.verdict.amend import Decided, DecidedRuns


def _log() -> Any:
    # imported on first use, as in model/consumers.py: offline start-up need not load it
    import structlog

    return structlog.get_logger("faultgate_stream.verdict")


class _TraceState:
    __slots__ = ("ruleset", "states", "observing", "watching", "bound_states", "agents", "early", "fired_early")

    def __init__(self, ruleset: Ruleset, states: list[Any], observing: tuple[int, ...],
                 watchers: tuple[Check, ...]) -> None:
        self.ruleset = ruleset
        self.states = states
        self.observing = observing  # indexes of the checks that look at spans as they arrive
        # ... as (check, state) pairs, what the span path loops over; ``watchers`` are those
        # checks (``Evaluator._fresh`` works them out once per ruleset), paired in C
        self.watching = tuple(zip(watchers, map(states.__getitem__, observing)))
        self.bound_states: dict[int, Any] = {}  # id(check) -> early state
        # span -> its nearest agent's name: only a check bound to an agent needs it, and most
        # rulesets bind none (it was built for every trace: four dicts)
        self.agents = NearestAgent() if ruleset.bindings else None
        self.early: list[EarlyFinding] = []
        self.fired_early: set[str] = set()


class Evaluator:
    """A ``RunConsumer``: the assembler's next stage."""

    def __init__(self, ruleset: Ruleset | list[Check], consumer: VerdictConsumer, *,
                 telemetry: Telemetry | None = None, decided: DecidedRuns | None = None,
                 early: bool = True, profile: Callable[[Run], RunProfile] | None = None, isolation: Any = None,
                 threads: Any = None) -> None:
        self.ruleset = ruleset if isinstance(ruleset, Ruleset) else Ruleset(tuple(ruleset))
        # Plug-ins run on a thread of their own (checks/plugins/isolate.py): made when a
        # ruleset first holds one; ``isolation`` is its limits (checks.isolation).
        self._limits = isolation
        self._telemetry = telemetry
        self._threads = threads
        self.isolation: Any = None
        # Without early findings (the offline command: no one hears of a run before its
        # verdict) no span is observed; every verdict is ``finish``'s alone either way.
        self._watch = early
        self._next = consumer
        self._traces: dict[str, _TraceState] = {}
        self._shape_memo: tuple[Ruleset, tuple[int, ...], tuple[tuple[int, Check], ...], list[None],
                                 tuple[Check, ...]] | None = None
        self._placed_memo: tuple[Any, Any, Any] = (None, None, None)
        self._errors = telemetry["faultgate_check_errors"] if telemetry is not None else None
        self._internal = telemetry["faultgate_internal_errors"] if telemetry is not None else None
        self.decided = decided
        self._unamendable = telemetry["faultgate_late_spans_unamendable"] if telemetry is not None else None
        self._publish = threading.Lock()
        # drift, sessions and judge routing read a run's profile; None: nobody does, none made
        self._profile = profile
        self._isolate(self.ruleset)

    # A check that raises is a bug, never an answer about the run: that run gets an error
    # result for that check (counted, logged with its traceback), and every other check
    # and every other run goes on as if nothing happened (issue 9, defect 1).
    def _failed(self, check: Check, where: str, run_key: object) -> None:
        _log().exception("check_failed", check=check.name, stage=where, run=str(run_key))
        if self._errors is not None:
            self._errors.labels(check.name).inc()

    def _observe(self, check: Check, state: Any, span: SpanRecord) -> str | None:
        try:
            return check.observe(state, span)
        except Exception:
            self._failed(check, "observe", span.trace_id)
            return None

    def _finish(self, check: Check, state: Any, run: Run) -> list[CheckResult]:
        """``check``'s results on ``run``: one, or a check of several's (``Check.members``)."""
        try:  # a plug-in judged on an agent's view hands the stage its run in a placeholder
            r = check.pending(state, run) if check.isolated else check.finish(state, run)
        except Exception as e:
            return self._failed_results(check, run, e)
        results = r if type(r) is list else [r]
        unread = run.unread
        if unread.reasons:
            return [c.held_to_what_was_read(x, unread, run) for c, x in zip(check.members or (check,), results)]
        return results

    def _failed_results(self, check: Check, run: Run, e: Exception) -> list[CheckResult]:
        """What a check that raised in ``finish`` gives: each of a check of several
        (``Check.members``) undecided and counted, as one that raised on its own."""
        return [self._failed_result(c, run, e) for c in check.members or (check,)]

    def _failed_result(self, check: Check, run: Run, e: Exception) -> CheckResult:
        self._failed(check, "finish", run.key)
        # undecided, not passed: a check that could not judge the run never makes it clean
        return check.undecided(f"the check failed on this run ({type(e).__name__}, an internal error)")

    def _internal_error(self, where: str, run: Run) -> None:
        _log().exception("verdict_failed", stage=where, run=str(run.key))
        if self._internal is not None:
            self._internal.labels(f"verdict_{where}").inc()

    def _undecided(self, st: _TraceState, run: Run, e: Exception) -> RunVerdict:
        """The verdict of a run whose verdict could not be worked out (a bug outside any one
        check's ``finish``: a bound check's result that is not one, the run's facts): every
        check undecided. It is still published, so the run is counted and its held spans
        leave. It reads the run's plain fields only, none of its computed facts (``Run``'s
        ``RunFact``s), since those may be what raised."""
        self._internal_error("evaluate", run)
        rs = st.ruleset
        missing = f"the run's verdict could not be worked out ({type(e).__name__}, an internal error)"
        results = tuple(c.undecided(missing) for c in rs.reporting)
        spans = run.spans
        members = frozenset(s.span_id for s in spans)
        # by keyword: a cold path, unlike ``_verdict``'s positional build
        return RunVerdict(
            key=run.key, scenario="", agent="", agent_version="", completion=run.completion, results=results,
            steps=0, spans=len(spans), first_start_ns=spans[0].start_ns if spans else 0,
            last_end_ns=max((s.end_ns for s in spans), default=0), root_arrival_ns=run.root_arrival_ns,
            decided_ns=run.closed_ns, root_span_id=run.root.span_id if run.root is not None else "",
            released_span_ids=members | run.outside_span_ids,
            early=tuple(f for f in st.early if f.span_id in members),  # already reported: the verdict still names them
            rule_digests=(rs.digest,) * len(results))

    @property
    def checks(self) -> tuple[Check, ...]:
        return self.ruleset.checks

    def reload(self, ruleset: Ruleset) -> None:
        """Swap in a new ruleset: runs whose trace starts afterwards use it."""
        self._isolate(ruleset)
        self.ruleset = ruleset

    def _isolate(self, rs: Ruleset) -> None:
        """Hand the ruleset's plug-ins to the isolation stage, made on first need."""
        plugins = [c for c in rs.every_check() if c.isolated]
        if not plugins:
            return
        if self.isolation is None:
            from faultgate_stream.checks.plugins.isolate import Isolation

            limits = self._limits
            if limits is None:
                from faultgate_stream.checks.config import IsolationConfig
                limits = IsolationConfig()
            # the live service logs what plug-ins did; offline their results say it
            self.isolation = Isolation(limits, self._early_isolated, telemetry=self._telemetry,
                                       threads=self._threads, log=_log() if self._telemetry is not None else None)
        self.isolation.adopt(plugins)

    def _early_isolated(self, finding: EarlyFinding) -> None:
        """A plug-in's early finding, from the isolation stage's thread."""
        with self._publish:
            self._next.early(finding)

    def close(self, timeout: float | None = None) -> int:
        """Wait (up to ``timeout``) for the plug-ins' results of every run decided so far;
        verdicts still waiting after it go out with those results undecided. Returns how
        many did. Without plug-ins there is nothing to wait for."""
        return self.isolation.close(timeout) if self.isolation is not None else 0

    def _fresh(self, rs: Ruleset) -> _TraceState:
        """A trace's state under ``rs``: each check's ``start()``. Worked out once per
        ruleset: which checks override ``observe`` or ``observe_spans`` (most only judge the
        finished run, and calling their no-op ``observe`` on every span cost more than the
        ones that look) and which override ``start`` (the others start from None without a
        call each)."""
        memo = self._shape_memo
        if memo is None or memo[0] is not rs:
            checks = rs.checks
            observing = tuple(i for i, c in enumerate(checks) if type(c).observe is not Check.observe
                              or type(c).observe_spans is not Check.observe_spans)
            memo = self._shape_memo = (
                rs, observing, tuple((i, c) for i, c in enumerate(checks) if type(c).start is not Check.start),
                [None] * len(checks), tuple(checks[i] for i in observing))
        _, observing, starting, states, watchers = memo
        states = states.copy()
        for i, c in starting:
            states[i] = c.start()
        return _TraceState(rs, states, observing, watchers)

    def _agent(self, st: _TraceState, span: SpanRecord) -> str | None:
        """The span's nearest known agent's name: its own, an ancestor's, or one it names."""
        found = st.agents.nearest(span.span_id)
        if found:
            return found
        named = span.attrs.get(AGENT_NAME)
        return str(named) if named else None

    def span_arrived(self, span: SpanRecord) -> None:
        self.spans_arrived([span])

    def spans_arrived(self, spans: list[SpanRecord]) -> None:
        """The spans the assembler accepted from one batch, in arrival order: each is
        observed by the checks that look at spans as they arrive (``observe``), and by those
        bound to its agent; an early finding is passed on at once.

        A batch's spans mostly come a trace at a time: each trace's stretch of them is
        observed by one ``observe_spans`` call per check (for the default checks one
        compiled call, where a Python loop turn and a call per span and check were ~4% of a
        live span's CPU), and its findings passed on in the order observing the spans one
        at a time finds them (by span, then by check). A check that raises is counted once
        for the stretch and observes no more of it. Checks bound to agents then observe the
        stretch span by span (each span's agent is known only once its ancestors were
        added); at one span their findings come after the every-run checks'."""
        if not self._watch:
            return
        traces = self._traces
        lo = 0
        for hi in trace_stretches(spans):
            tid = spans[lo].trace_id
            st = traces.get(tid)
            if st is None:  # the trace's first spans
                st = traces[tid] = self._fresh(self.ruleset)
            found = []
            for check, state in st.watching:
                try:
                    first = check.observe_spans(state, spans, lo, hi)
                except Exception:
                    for c in check.members or (check,):  # a check of several: each of them
                        self._failed(c, "observe", tid)
                    continue
                if first is not None:
                    if type(first) is list:  # a check of several's: each one's first (``Check.members``)
                        found += first
                    else:
                        found.append((first[0], first[1], check, ""))
            if st.agents is not None:  # the ruleset binds agents
                for i in range(lo, hi):
                    self._observe_bound(st, spans, i, found)
            if len(found) > 1:
                found.sort(key=_FIRST)  # stable: at one span, the every-run checks in order, then the bound
            for i, reason, check, agent in found:
                self._early(st, check, reason, spans[i], agent)
            lo = hi

    def _observe_bound(self, st: _TraceState, spans: list[SpanRecord], at: int, found: list) -> None:
        """The checks bound to the agent of ``spans[at]`` observe it, each with its own state;
        what they find is added to ``found`` as (``at``, reason, check, agent)."""
        span = spans[at]
        st.agents.add(span.span_id, span.parent_id,
                      str(span.attrs.get(AGENT_NAME) or span.name) if span.is_agent else None)
        agent = self._agent(st, span)
        for check in st.ruleset.bound(agent):
            state = st.bound_states.get(id(check))
            if state is None:
                state = st.bound_states[id(check)] = check.start()
            if check.members:  # a check of several: each one's finding, as its own (``Check.members``)
                try:
                    got = check.observe_spans(state, spans, at, at + 1)
                except Exception:
                    for c in check.members:
                        self._failed(c, "observe", span.trace_id)
                    continue
                found += [(at, reason, c, agent or "") for _, reason, c, _ in got or ()]
                continue
            reason = self._observe(check, state, span)
            if reason:
                found.append((at, reason, check, agent or ""))

    def _early(self, st: _TraceState, check: Check, reason: str | None, span: SpanRecord, agent: str) -> None:
        if not reason or check.name in st.fired_early:
            return
        st.fired_early.add(check.name)
        finding = EarlyFinding(span.trace_id, span.span_id, check.name, reason,
                               agent or str(span.attrs.get(AGENT_NAME, "")))
        st.early.append(finding)
        with self._publish:
            self._next.early(finding)

    def run_completed(self, run: Run) -> None:
        # The state goes with the trace's first completed run: a later run of the same
        # trace starts afresh, which only affects early findings, never a verdict.
        st = self._traces.pop(run.key.trace_id, None)
        if st is None:
            st = self._fresh(self.ruleset)
        # Whatever raises in here, the run still gets a verdict: otherwise the scan lost the
        # trace's other runs, and the held spans of them all were never released.
        try:
            v = self._verdict(st, run)
        except Exception as e:
            v = self._undecided(st, run, e)
            if self.isolation is not None:  # no placeholder in it: the stage finds none
                self.isolation.complete(v, lambda final: self._decided(st, run, final))
                return
        if self.isolation is not None:  # plug-ins: their results come from their own thread
            # ``partial``: called in C, where a lambda was one more Python frame a run
            self._complete_isolated(v, partial(self._decided, st, run), st.ruleset, run, st.states)
            return
        self._decided(st, run, v)

    def _complete_isolated(self, v: RunVerdict, done: Callable[[RunVerdict], None], rs: Ruleset, run: Run,
                           states: Any) -> None:
        """Hand ``v`` to the isolation stage, which puts its plug-ins' results in and then
        calls ``done``; where they are and what each judges as ``_placed`` says."""
        memo = self._placed_memo
        _, jobs, plan = memo if memo[0] is rs else self._placed(rs)  # the memo read here: a frame less a run
        if jobs is None or v.setup_only:
            self.isolation.complete(v, done)
        else:
            self.isolation.complete(v, done, jobs, plan, run, states)

    def _placed(self, rs: Ruleset) -> tuple:
        """(``rs``, jobs, plan): what the isolation stage needs to judge the plug-ins of a
        verdict under ``rs`` (``Isolation.complete``, with the run and its checks' states):
        without bindings, the places of the plug-ins' stand-ins (``PluginCheck.finish``)
        among the ruleset's checks, and each one's check and index in the states; with
        bindings (rs, None, None): the stage looks for placeholders. Worked out once per
        ruleset, kept in ``_placed_memo``."""
        if self._placed_memo[0] is rs:
            return self._placed_memo
        if rs.bindings:
            memo = (rs, None, None)
        else:
            places = []  # (its result's index, its state's, the check): a check of several gives several results
            at = 0
            for i, c in enumerate(rs.checks):
                if c.isolated:
                    places.append((at, i, c))
                at += len(c.members) or 1
            memo = (rs, tuple(("results", at, c.stand_in) for at, _, c in places),
                    tuple((c, i) for _, i, c in places))
        self._placed_memo = memo
        return memo

    def _decided(self, st: _TraceState, run: Run, v: RunVerdict) -> None:
        """Keep (for amendments) and publish a run's verdict."""
        if self.decided is not None and not v.setup_only:
            try:  # kept before it is published: the judge stage may look the run up at once
                self.decided.keep(run, v, st.ruleset)
            except Exception:  # it will not be amended; its verdict stands
                self._internal_error("keep", run)
        with self._publish:
            self._next.verdict(v)

    def _verdict(self, st: _TraceState, run: Run, judged: tuple[CheckResult, ...] = ()) -> RunVerdict:
        spans = run.spans
        setup_only = bool(spans) and spans[0].operation == CREATE_AGENT and all(
            s.operation == CREATE_AGENT for s in spans)
        results = () if setup_only else self._results(st, run) + judged
        rs = st.ruleset
        members = run.span_ids
        outside = run.outside_span_ids
        early = st.early
        unread = None if setup_only else run.unread
        # every field, in order, as the tuple it is (``tuple.__new__``, what ``_make`` calls):
        # the NamedTuple's generated ``__new__`` is a Python frame more a run, and with
        # keywords it matched 19 names on every run (~3 µs a run, four times the positional call)
        return _new_tuple(RunVerdict, (
            run.key, run.scenario, run.agent, run.agent_version, run.completion, results, run.step_count,
            len(spans),
            spans[0].start_ns if spans else 0,  # first_start_ns: Run.spans are in start order
            setup_only,
            run.last_end_ns,  # last_end_ns
            run.root_arrival_ns,
            run.closed_ns,  # decided_ns
            run.root.span_id if run.root is not None else "",  # root_span_id
            members | outside if outside else members,  # released_span_ids
            tuple(f for f in early if f.span_id in members) if early else (),  # early
            {"tokens": run.usage_tokens, "latency_ms": run.latency_ms, "cost_usd": run.cost_usd},  # measures
            # rule_digests: without bindings every result comes from the every-run checks (``digest_of``)
            ((rs.digest,) * len(results) if not rs.bindings and not rs.own_digests else
             rs.digests if not rs.bindings and len(results) == len(rs.digests) else
             tuple(rs.digest_of(r.check, r.agent or run.agent) for r in results)),
            self._shadow(rs, run) if rs.has_shadow and not setup_only else (),  # shadow
            0, "", (), "",  # revision, previous, amended_checks, amended_by
            self._profile(run) if self._profile is not None and not setup_only else None,  # profile
            unread.counts() if unread is not None and unread.reasons else (),  # unread
        ))

    def _results(self, st: _TraceState, run: Run) -> tuple[CheckResult, ...]:
        rs = st.ruleset
        if not rs.bindings:
            results = []
            for c, state in zip(rs.checks, st.states):
                try:  # ``_finish`` inlined: the one loop every run goes through
                    results.append(c.finish(state, run))
                except Exception as e:
                    results.append(self._failed_results(c, run, e) if c.members else self._failed_result(c, run, e))
            for k in rs.several:  # a check of several's list of results, in its place (``Check.members``)
                results[k:k + 1] = results[k]
            unread = run.unread
            # agent work no convention read: no check passes on what it hid (``reasons``:
            # the work's truth without ``UnreadWork.__bool__``'s Python call)
            if unread.reasons:
                return tuple(c.held_to_what_was_read(r, unread, run) for c, r in zip(rs.reporting, results))
            return tuple(results)
        views = agent_views(run)
        top_bound = {c.name for c in each(rs.bound(run.agent))}
        # a check bound to the top agent replaces the every-run check of the same name
        results = [r for c, state in zip(rs.checks, st.states) if c.name not in top_bound
                   for r in self._finish(c, state, run) if r.check not in top_bound]
        multi = len(views) > 1
        for agent, view in views:
            for check in rs.bound(agent):
                results += [r._replace(agent=agent) for r in self._judge_view(check, view)] if multi else \
                    self._judge_view(check, view)
        return tuple(results)

    def _shadow(self, rs: Ruleset, run: Run) -> tuple[CheckResult, ...]:
        """Shadow checks judge each agent's view like bound ones, after the fact: they
        report no early findings, since those reach the verdict's sinks."""
        views = agent_views(run)
        multi = len(views) > 1
        out = []
        for agent, view in views:
            for check in rs.shadow_bound(agent):
                out += [r._replace(agent=agent) for r in self._judge_view(check, view)] if multi else \
                    self._judge_view(check, view)
        return tuple(out)

    def _judge_view(self, check: Check, view: Run) -> list[CheckResult]:
        """A bound or shadow check's results on an agent's view, replayed in start order; a
        check that raises gets an undecided result, as an every-run check does."""
        state = check.start()
        if not check.isolated:  # a plug-in's finish decides from the run alone (checks/api.py)
            for s in view.spans:
                self._observe(check, state, s)
        return self._finish(check, state, view)

    def span_late(self, span: SpanRecord, decided: RunKey) -> None:
        """Late spans are counted by the assembler; with a store of decided runs, one that
        changes a check's result amends its run's verdict."""
        store = self.decided
        if store is None:
            return
        with store.lock:
            entry = store.get(decided)
            if entry is None or not store.grow(entry, span):
                if self._unamendable is not None:
                    self._unamendable.inc()
                return
            rs = entry.ruleset
            st = self._fresh(rs)
            run = entry.run()
            for s in run.spans:  # in start order, as a run decided whole would have been
                for i in st.observing:
                    self._observe(rs.checks[i], st.states[i], s)
            try:
                again = self._verdict(st, run, entry.judged)
            except Exception:  # the published verdict stands; the late span was counted as arrived
                self._internal_error("amend", run)
                return
            if self.isolation is not None:
                self._complete_isolated(again, partial(self._amend_locked, entry, by=span.span_id), rs, run,
                                        st.states)
                return
            self._amend(entry, again, span.span_id)

    def _amend_locked(self, entry: Decided, new: RunVerdict, by: str) -> None:
        store = self.decided
        with store.lock:
            self._amend(entry, new, by)

    def amend_judged(self, key: RunKey, judged: tuple[CheckResult, ...], by: str) -> bool | None:
        """Merge judge results into a kept run's verdict (a result for the same check
        replaces the earlier one) and publish the amendment when a result changed.
        ``None`` when the run is no longer kept; else whether it was amended."""
        store = self.decided
        if store is None:
            return None
        with store.lock:
            entry = store.get(key)
            if entry is None:
                return None
            names = {r.check for r in judged}
            entry.judged = tuple(r for r in entry.judged if r.check not in names) + judged
            prev = entry.verdict
            digests = prev.rule_digests if len(prev.rule_digests) == len(prev.results) else ("",) * len(prev.results)
            kept = [(r, d) for r, d in zip(prev.results, digests) if not (r.kind == "judge" and r.check in names)]
            new = prev._replace(results=tuple(r for r, _ in kept) + judged,
                                      rule_digests=tuple(d for _, d in kept) + (entry.ruleset.digest,) * len(judged))
            return self._amend(entry, new, by)

    def _amend(self, entry: Decided, new: RunVerdict, by: str) -> bool:
        """Publish ``new`` as the next revision of the entry's verdict if a check's result
        changed. Called with the store's lock held."""
        from faultgate_stream.verdict.amend import amendment, changed_checks

        checks = changed_checks(entry.verdict.results, new.results)
        if not checks:
            return False
        v = amendment(entry.verdict, new, checks, by, self.decided.now_ns() if self.decided is not None else 0)
        entry.verdict = v
        with self._publish:
            self._next.verdict(v)
        return True
