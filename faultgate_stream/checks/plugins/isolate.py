"""Plug-ins on a thread of their own: what one does cannot stall ingestion, probes or scrapes.

The evaluator decides every run on the threads that take spans in, under the assembler's
lock. A plug-in called there could hold that lock for as long as it liked: a
``time.sleep(10)`` would refuse every request for ten seconds. So a plug-in never runs
there. Its ``finish`` leaves a stand-in in the verdict (one constant result per plug-in:
the evaluator hands over its place, the run and the state; judged on an agent's view, a
placeholder that carries them, ``check.Pending``), its ``observe`` hands spans over, and
this stage works through both, in arrival order, on its own thread: it calls the plug-in,
puts its result in the verdict, and only then hands the verdict on (``done``). With
plug-ins configured every verdict passes through here, so they go out in the order they
were decided.

What a plug-in can do, and what happens:

- **raises, or returns something that is not a Result**: its result on that run is
  undecided, naming the exception type; counted in ``faultgate_check_errors_total``.
- **spends more than ``cpu_budget`` of CPU on a run** (start, every observe, finish): its
  result is undecided and the overrun counted. A call still running past the budget is
  interrupted: the watchdog thread raises an exception in it (``PyThreadState_SetAsyncExc``),
  which a loop of Python code meets at its next bytecode. A call's CPU is bounded by its
  wall time, read with the cheap clock; the thread's CPU clock (a system call, ~5 us on
  this machine's VMs) is read only when a call took longer than the budget.
- **does not return within ``deadline``** (sleeping, waiting on I/O): the watchdog gives up
  on it. Its result on that run is undecided, the thread is left to finish its call and
  end, and a new thread takes the work on where it stopped.
- **keeps overrunning** (``max_overruns`` in a row): switched off, with a log line, a count
  in ``faultgate_check_switched_off_total`` and ``faultgate_checks_off`` at 1 until a
  reload builds it again; its results say so, undecided.
- **cannot keep up** (more than ``max_queue`` runs and span batches waiting): a verdict
  goes out at once with its plug-ins' results undecided, spans go unobserved (their early
  findings are lost, never their verdict); counted in ``faultgate_plugin_queue_full_total``.

- **holds the GIL in one call into C** (a huge allocation, a catastrophic ``re`` pattern,
  ``sum(range(10**9))``): no thread can interrupt that; every thread of the process waits
  until it returns, whatever thread it runs on (only a separate process could be stopped,
  at a cost per run far above a plug-in's budget: bench/README.md). The watchdog sees it
  afterwards: it waited ``HELD_NS`` or more to take the GIL back after its sleep, while the
  plug-in's call was in progress and its thread computed; it switches the plug-in off at
  once: one stall per reload, not one per run. What the watchdog times is its wait for the
  GIL alone (``_wait_readable``), never its own late wake-up: on a loaded host
  a loop of Python code runs on past its budget until the watchdog gets a core, and that
  is a CPU overrun, not a stall.
  Rules without code (CEL, ``checks/rules``) cannot do that, one more reason to prefer
  them where they suffice.
"""
from __future__ import annotations

import ctypes
import gc
import operator
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from faultgate_stream import _native
from faultgate_stream.checks.api import _PASSED  # what ``api.passed()`` gives: one result, shared
from faultgate_stream.checks.plugins.adapt import GarbageResult, check_result
from faultgate_stream.checks.plugins.check import Pending, PluginCheck, PluginState
from faultgate_stream.model.records import RunKey
from faultgate_stream.model.telemetry import describe
from faultgate_stream.model.verdict import CheckResult, EarlyFinding, RunVerdict

# How long the plug-ins' thread waits for more work once it has none, before it sleeps
# until woken: a verdict waits at most this much longer, against a root_grace of seconds.
LINGER_S = 0.005
# How often the watchdog looks at a call in progress while there is work: a runaway loop
# is stopped within its budget plus this much CPU; each look is a few system calls. With
# no work it waits until the worker takes some (``_nudge``).
WATCH_INTERVAL_MS = 10
# The watchdog waited this long to take the GIL back, while a plug-in's call was in
# progress: the call held it (a loop of Python code lets a waiting thread in within a
# switch interval, 5 ms; 40 of them is far past what the hand-overs' wake-ups add on a
# loaded host).
HELD_NS = 200_000_000
# ... and the plug-in's thread computed at least this much meanwhile, less its collections
# (on a loaded host a call gets a share of a core; a sleeping call, or a stall someone else
# caused, computes nothing).
HELD_CPU_NS = 50_000_000
# Threads given up on (stuck in a call) that may be alive at once. Past it, the plug-in
# whose call was given up is switched off at once: no plug-in can pile up threads.
MAX_ABANDONED_THREADS = 16
# Early findings of plug-ins kept for their trace's verdict; the oldest trace's go first.
MAX_EARLY_TRACES = 10_000

_set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
_set_async_exc.argtypes = (ctypes.c_ulong, ctypes.py_object)
# a plain C function of the compiled module (native/py/src/python/gil.rs, where why ctypes):
# ctypes lets the GIL go around the call
# (``_wait_readable(fd, timeout_ms, watch)``: counts the wait begun in ``watch[1]``, waits
# without the GIL until ``fd`` is readable or ``timeout_ms`` passed, -1 for no limit, then
# stores in ``watch[0]`` when it began to wait for the GIL, by ``time.perf_counter_ns()``'s
# clock)
_wait_readable = ctypes.CDLL(_native.__file__).faultgate_wait_readable
_wait_readable.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_uint64))
_wait_readable.restype = None


class Overrun(Exception):
    """Raised in a plug-in's call by the watchdog when the call ran past its CPU budget.
    An ``Exception``: a plug-in's ``except Exception`` may swallow it, but then its loop
    goes on overrunning and the next look raises it again."""


_STOPPED = object()  # what a call the stage did not make (it was closing) returned


class _Abandoned(BaseException):
    """Ends a thread whose call was given up on, once the call returns."""


class _Call:
    """The call in progress on one worker thread, as the watchdog sees it. One per worker,
    set afresh for each of its calls (``_call``; a record per call was a fifth of a run's
    Python): a thread given up on makes no further call, its record goes to ``_stuck`` as it
    is, and the thread that takes the work on has a record of its own."""

    __slots__ = ("check", "state", "wall0", "cpu_seen", "budget_ns", "interrupted", "gen", "ident", "done", "gc0")

    def __init__(self, gen: int, ident: int) -> None:
        self.gen, self.ident = gen, ident  # the worker's
        self.check: Any = None
        self.state: Any = None
        self.budget_ns = 0
        self.gc0 = 0  # the plug-in thread's collection time so far, when the call began
        self.wall0 = 0
        self.cpu_seen = -1  # the thread's CPU clock at the watchdog's first look
        self.interrupted = False
        self.done = True  # the call returned (set under the lock)


class _Observe:
    __slots__ = ("check", "state", "spans", "pos")

    def __init__(self, check: PluginCheck, state: PluginState, spans: list) -> None:
        self.check, self.state, self.spans, self.pos = check, state, spans, 0


class _Complete:
    """A verdict to complete. ``jobs``: (field, index, stand-in or placeholder) a plug-in's
    result each; ``plan``: for stand-ins, each job's check and index in ``states``, the run's
    checks' states (``Evaluator._placed``); None: every job a placeholder that says."""

    __slots__ = ("verdict", "jobs", "out", "done", "pos", "plan", "run", "states")

    def __init__(self, verdict: RunVerdict, jobs: Any, done: Callable[[RunVerdict], None],
                 plan: Any = None, run: Any = None, states: Any = None) -> None:
        self.verdict, self.jobs, self.done = verdict, jobs, done
        self.plan, self.run, self.states = plan, run, states
        self.out: list[CheckResult | None] = [None] * len(jobs)
        self.pos = 0


_reason_of = operator.itemgetter(CheckResult._fields.index("reason"))


def _placeholders(field: str, results: tuple[CheckResult, ...], jobs: list) -> None:
    # the types of the reasons listed and searched in C: a loop of Python over every
    # result of every run was a tenth of a plug-in's cost
    kinds = list(map(type, map(_reason_of, results)))
    i = -1
    for _ in range(kinds.count(Pending)):
        i = kinds.index(Pending, i + 1)
        jobs.append((field, i, results[i]))


def pending_jobs(v: RunVerdict) -> list[tuple[str, int, CheckResult]]:
    """Where a verdict's placeholders are: (field, index, placeholder)."""
    jobs: list[tuple[str, int, CheckResult]] = []
    _placeholders("results", v.results, jobs)
    if v.shadow:
        _placeholders("shadow", v.shadow, jobs)
    return jobs


class Isolation:
    """Runs plug-ins for one evaluator. ``early`` publishes a plug-in's early finding."""

    def __init__(self, limits: Any, early: Callable[[EarlyFinding], None], *, telemetry: Any = None,
                 threads: Any = None, log: Any = None) -> None:
        self.budget_ns = int(limits.cpu_budget * 1e9)
        self.deadline_ns = int(limits.deadline * 1e9)
        self.max_overruns = limits.max_overruns
        self.max_queue = limits.max_queue
        self._remark_ns = max(self.budget_ns // 10, 1)
        self._early_out = early
        self._errors = telemetry["faultgate_check_errors"] if telemetry is not None else None
        self._threads = threads
        self._log = log
        self._q: deque = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._busy = False  # the worker has work: the watchdog looks every WATCH_INTERVAL_MS
        self._nudge_r = self._nudge_w = -1  # the watchdog's pipe, woken through (``_nudge``)
        # the watchdog's last wait for the GIL: from ``_watch_at[0]`` (set without the GIL) to
        # ``_took``; while it waits, the former is the later (``_gil_waited``)
        self._watch_at = (ctypes.c_uint64 * 2)()
        self._took = 0
        self._idle_cv = threading.Condition(self._lock)
        self._waiting = False
        self._outstanding = 0  # items queued or in hand
        self._gen = 0
        self._current: _Call | None = None
        self._item: Any = None
        self._worker: threading.Thread | None = None
        self._worker_ident = 0
        self._watchdog: threading.Thread | None = None
        self._stopping = False
        self._abandoned = 0
        self._stuck: list[_Call] = []  # calls given up on whose threads have not ended yet
        # wall time of garbage collections made on the plug-ins' thread: not the plug-in's doing
        self._gc_ns = 0
        self._gc_started = 0
        gc.callbacks.append(self._collected)
        self._cpu_mark = 0
        self._wall_since_mark = 0
        self._early: dict[str, list[EarlyFinding]] = {}
        self._scratch = PluginState()  # the state of a run of a plug-in that does not observe (``_judge``)
        # counted here, read at scrape time (``metrics()``): no metrics call per plug-in call
        self.overruns: dict[tuple[str, str], int] = {}
        self.switched_off: dict[str, int] = {}
        self.cpu_ns: dict[str, int] = {}
        self.queue_full = {"observe": 0, "verdict": 0}
        self.off: dict[str, bool] = {}

    def _collected(self, phase: str, info: dict) -> None:
        if threading.get_ident() != self._worker_ident:
            return
        if phase == "start":
            self._gc_started = time.perf_counter_ns()
        elif self._gc_started:
            self._gc_ns += time.perf_counter_ns() - self._gc_started
            self._gc_started = 0

    # ------------------------------------------------------------------ the evaluator's side

    def adopt(self, checks: Iterable[Any]) -> None:
        """Run these checks' plug-ins from now on (a ruleset's, at start and at each reload)."""
        for c in checks:
            if isinstance(c, PluginCheck):
                c.stage = self
                name = c.name
                for limit in ("cpu", "deadline", "gil"):
                    self.overruns.setdefault((name, limit), 0)
                self.switched_off.setdefault(name, 0)
                self.cpu_ns.setdefault(name, 0)
                self.off[name] = c.guard.off
                if self._errors is not None:
                    self._errors.labels(name)

    def observe(self, check: PluginCheck, state: PluginState, spans: list) -> None:
        if len(self._q) >= self.max_queue:
            self.queue_full["observe"] += 1
            return
        self._put(_Observe(check, state, spans))

    def complete(self, v: RunVerdict, done: Callable[[RunVerdict], None], jobs: Any = None, plan: Any = None,
                 run: Any = None, states: Any = None) -> None:
        """Put the plug-ins' results in ``v`` and hand it to ``done``, on this stage's thread,
        after everything handed over before it. ``jobs, plan, run, states``: where its
        plug-ins' stand-ins are and what each judges (``Evaluator._placed``); without them
        its placeholders are looked for (``pending_jobs``)."""
        if jobs is None:
            jobs = pending_jobs(v)
        if len(self._q) >= self.max_queue and jobs:
            self.queue_full["verdict"] += 1
            done(_fill(v, jobs, [_undecided(r, "the plug-in queue was full (checks.isolation.max_queue)")
                                 for _, _, r in jobs], ()))
            return
        self._put(_Complete(v, jobs, done, plan, run, states))

    def _put(self, item: Any) -> None:
        with self._lock:
            self._outstanding += 1
            if self._worker is None:
                self._start_worker()
        self._q.append(item)
        # once: while the worker waits for the GIL, every run handed over would set it again
        if self._waiting and not self._wake.is_set():
            self._wake.set()

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until everything handed over was done; False when ``timeout`` ran out first."""
        with self._idle_cv:
            return self._idle_cv.wait_for(lambda: self._outstanding == 0, timeout)

    def close(self, timeout: float | None = None) -> int:
        """Drain within ``timeout``; verdicts still waiting then go out with their plug-ins'
        results undecided (none is lost). Returns how many. Safe twice."""
        self.drain(timeout)
        with self._lock:
            self._stopping = True
            left = list(self._q)
            self._q.clear()
            # the item in hand is finished here only when its worker is inside a plug-in's
            # call (it ends once the call returns); in its own code it finishes it itself
            item = self._item if self._current is not None else None
            self._gen += 1  # a worker still in a call ends once it returns
            if item is not None:
                self._item = None
            self._outstanding = 0
            self._idle_cv.notify_all()
        self._wake.set()
        self._nudge()
        # an item its worker finishes itself (between two calls) goes out before close returns
        deadline = time.monotonic() + 1.0
        while item is None and self._item is not None and time.monotonic() < deadline:
            time.sleep(0.001)
        if self._collected in gc.callbacks:
            gc.callbacks.remove(self._collected)
        n = 0
        for it in ([item] if isinstance(item, _Complete) else []) + left:
            if isinstance(it, _Complete):
                filled = [o or _undecided(r, "the service stopped before the plug-in answered")
                          for o, (_, _, r) in zip(it.out, it.jobs)]
                it.done(_fill(it.verdict, it.jobs, filled, ()))
                n += 1
        return n

    # ------------------------------------------------------------------ the worker

    def _start_worker(self) -> None:
        if self._watchdog is None:
            self._nudge_r, self._nudge_w = os.pipe()
            os.set_blocking(self._nudge_r, False)
            os.set_blocking(self._nudge_w, False)
            self._watchdog = threading.Thread(target=self._watch, name="plugins-watchdog", daemon=True)
            self._watchdog.start()
            # the first call may hold the GIL from its start: the watchdog must be in its wait
            # by then (having let the GIL go), or it would wait for the GIL in Python's own
            # code, untimed
            deadline = time.monotonic() + 5.0
            while not self._watch_at[1] and time.monotonic() < deadline:
                time.sleep(0.0005)
        gen = self._gen
        name = "plugins"
        if self._threads is not None:
            th = self._threads.start(name, lambda: self._work(gen))
        else:
            th = threading.Thread(target=self._work, args=(gen,), name=name, daemon=True)
            th.start()
        self._worker = th

    def _work(self, gen: int) -> None:
        self._worker_ident = threading.get_ident()
        call = _Call(gen, self._worker_ident)
        self._cpu_mark = time.thread_time_ns()
        self._wall_since_mark = 0
        q = self._q
        try:
            while True:
                if self._gen != gen or self._stopping:
                    return
                try:
                    item = q.popleft()
                except IndexError:
                    # Linger before sleeping: under load runs complete a few per scan, and a
                    # wake-up per scan cost more (a hand-over of the GIL each) than the runs'
                    # plug-in calls; a few milliseconds later their verdicts go out together.
                    time.sleep(LINGER_S)
                    if q:
                        continue
                    self._busy = False
                    self._waiting = True
                    if not q:
                        self._wake.wait()
                        self._wake.clear()
                    self._waiting = False
                    continue
                if not self._busy:
                    self._busy = True
                    self._nudge()
                # where close() and the watchdog find the item in hand, set without a lock
                # section of its own (one of five a run): they act on it only under the lock,
                # while a call of this worker is in progress (``_current``, set after this in
                # ``_call``, which checks under the lock that this worker still runs), or wait
                # for it to be finished (close). A worker stopped meanwhile finishes it with
                # its plug-ins' results undecided, as it does an item stopped between two calls.
                self._item = item
                try:
                    if type(item) is _Complete:
                        self._complete(item, call)
                    else:
                        self._observe(item, call)
                except Overrun:
                    # a look that landed outside a call (none should): the item goes on from
                    # where it stopped, never lost
                    with self._lock:
                        if self._item is item:
                            self._item = None
                            q.appendleft(item)
                    continue
                with self._lock:
                    if self._item is item:
                        self._item = None
                    if self._gen != gen:
                        return
                    self._outstanding -= 1
                    if self._outstanding == 0:
                        self._idle_cv.notify_all()
        except _Abandoned:
            return
        finally:
            if self._gen != gen:
                with self._lock:
                    self._abandoned = max(0, self._abandoned - 1) if self._abandoned else 0

    def _observe(self, item: _Observe, call: _Call) -> None:
        check, state = item.check, item.state
        while item.pos < len(item.spans):
            rec = item.spans[item.pos]
            item.pos += 1
            if check.guard.off or state.failed:
                continue
            if state.cpu_ns > self.budget_ns:
                state.failed = "cpu"
                continue
            if not state.started:
                if check.starts:
                    ok, inner = self._call(check, state, check.plugin.start, (), call)
                    if not ok:
                        continue
                    state.inner = inner
                state.started = True
            ok, res = self._call(check, state, check.plugin.observe, (state.inner, check.views.span(rec)), call)
            if not ok or res is None:
                continue
            try:
                r = check_result(check.name, check.severity, check.kind, res, check.evaluator)
            except GarbageResult:
                self._error(check, state, "garbage")
                continue
            if r.fired and state.early is None:
                state.early = (rec.span_id, r.reason)
                agent = rec.attrs.get("gen_ai.agent.name", "")
                f = EarlyFinding(rec.trace_id, rec.span_id, check.name, r.reason, str(agent) if agent else "")
                found = self._early.setdefault(rec.trace_id, [])
                found.append(f)
                if len(self._early) > MAX_EARLY_TRACES:
                    self._early.pop(next(iter(self._early)))
                self._early_out(f)

    def _complete(self, item: _Complete, call: _Call) -> None:
        # facts shared by the plug-ins of a run that see the same attributes; one plug-in's
        # (the usual case) need no table
        jobs, v = item.jobs, item.verdict
        if item.plan is not None and len(jobs) == 1 and not item.pos and not self._early:
            # one plug-in's stand-in, none observing (the usual case): no loop, no table, the
            # verdict made with its one result in place
            _, at, stand_in = jobs[0]
            r = v.results[at]
            if r is stand_in:  # else the evaluator's own result (the check's finish failed): it stands
                check, i = item.plan[0]
                r = self._judge(stand_in, check, item.states[i], item.run, None, call)
            item.out[0] = r
            item.pos = 1
            item.done(_with_result(v, at, r))
            return
        out, plan = item.out, item.plan
        views: dict[tuple[int, frozenset], Any] | None = {} if len(jobs) > 1 else None
        if plan is None:  # placeholders: each carries its run and state
            while item.pos < len(jobs):
                k = item.pos
                out[k] = self._finish(jobs[k][2], views, call)
                item.pos = k + 1
        else:  # stand-ins: judged from the run and its states, as ``plan`` says
            results, states, run = v.results, item.states, item.run
            for k in range(item.pos, len(jobs)):
                _, at, stand_in = jobs[k]
                r = results[at]
                if r is stand_in:  # else the evaluator's own result (the check's finish failed): it stands
                    check, i = plan[k]
                    r = self._judge(stand_in, check, states[i], run, views, call)
                out[k] = r
                item.pos = k + 1
        early: tuple = ()
        if self._early:  # only plug-ins that observe find anything early
            found = self._early.pop(v.key.trace_id, ())
            if found:
                members = v.released_span_ids
                early = tuple(f for f in found if f.span_id in members)
        item.done(_fill(v, jobs, out, early))

    def _finish(self, placeholder: CheckResult, views: dict | None, call: _Call) -> CheckResult:
        pend: Pending = placeholder.reason  # type: ignore[assignment]
        if type(pend) is not Pending:  # not a placeholder (the check's finish failed): it stands
            return placeholder
        return self._judge(placeholder, pend.check, pend.state, pend.run, views, call)

    def _judge(self, placeholder: CheckResult, check: PluginCheck, state: Any, run: Any, views: dict | None,
               call: _Call) -> CheckResult:
        """The plug-in's result on ``run``; ``placeholder`` (a stand-in or a placeholder) is
        what its undecided results are made from, and names the agent judged, if any."""
        if type(state) is not PluginState:  # a plug-in that does not observe: a state for this run
            # alone, one object reset rather than one made a run (nothing holds it past the run)
            state = self._scratch
            state.inner, state.started, state.cpu_ns, state.failed = None, False, 0, ""
        guard = check.guard
        if guard.off:
            n = guard.overruns
            return _undecided(placeholder, f"switched off after {n} overrun{'s' if n > 1 else ''} in a row "
                                           f"(last: {guard.last})")
        if views is None:
            view = check.views.run(run)
        else:
            key = (id(run), check.views.allowed)
            facts = views.get(key)
            if facts is None:
                facts = views[key] = check.views.facts(run)
            view = check.views.view(facts)
        if not state.started:
            if check.starts:
                ok, inner = self._call(check, state, check.plugin.start, (), call)
                if not ok:
                    return self._failed(placeholder, check, state, inner)
                state.inner = inner
            state.started = True
        ok, res = self._call(check, state, check.plugin.finish, (state.inner, view), call)
        self.cpu_ns[check.name] += state.cpu_ns
        if not ok:
            return self._failed(placeholder, check, state, res)
        if state.cpu_ns > self.budget_ns:
            return self._overrun(placeholder, check, "cpu", state.cpu_ns)
        if res is _PASSED:
            r = check.passed_result
        else:
            try:
                r = check_result(check.name, check.severity, check.kind, res, check.evaluator)
            except GarbageResult as e:
                self._error(check, state, "garbage")
                return _undecided(placeholder, f"the plug-in failed on this run: it {e}")
        guard.overruns = 0
        unread = run.unread  # agent work no convention read: no plug-in passes on what it hid
        if unread.reasons:  # what its ``__bool__`` says, without the frame (one a run)
            r = check.held_to_what_was_read(r, unread, run)
        return r._replace(agent=placeholder.agent) if placeholder.agent else r

    def _failed(self, placeholder: CheckResult, check: PluginCheck, state: PluginState, e: Any) -> CheckResult:
        if e is _STOPPED:
            return _undecided(placeholder, "the service stopped before the plug-in answered")
        if state.failed == "gil":
            return _undecided(placeholder, f"the plug-in {check.guard.last}")
        if isinstance(e, Overrun) or state.failed == "cpu":
            return self._overrun(placeholder, check, "cpu", state.cpu_ns)
        if state.failed == "deadline":
            return _undecided(placeholder, f"the plug-in did not return within {self.deadline_ns / 1e9:g}s")
        return _undecided(placeholder, f"the plug-in failed on this run ({type(e).__name__}: {_short(e)})")

    def _overrun(self, placeholder: CheckResult, check: PluginCheck, limit: str, used_ns: int) -> CheckResult:
        if limit == "cpu":
            what = f"over its CPU budget ({used_ns / 1e6:.1f} ms of {self.budget_ns / 1e6:g} ms on this run)"
        else:
            what = f"did not return within {self.deadline_ns / 1e9:g}s"
        self._count_overrun(check, limit, what)
        return _undecided(placeholder, f"the plug-in was {what}" if limit == "cpu" else f"the plug-in {what}")

    def _count_overrun(self, check: PluginCheck, limit: str, what: str, now: bool = False) -> None:
        self.overruns[(check.name, limit)] = self.overruns.get((check.name, limit), 0) + 1
        guard = check.guard
        guard.overruns += 1
        guard.last = what
        if not guard.off and (now or guard.overruns >= self.max_overruns
                              or self._abandoned >= MAX_ABANDONED_THREADS):
            guard.off = True
            self.off[check.name] = True
            self.switched_off[check.name] = self.switched_off.get(check.name, 0) + 1
            if self._log is not None:
                self._log.error("plugin_switched_off", check=check.name, evaluator=check.evaluator,
                                overruns=guard.overruns, last=what)

    def _error(self, check: PluginCheck, state: PluginState, what: str) -> None:
        if self._errors is not None:
            self._errors.labels(check.name).inc()
        if self._log is not None:
            self._log.warning("plugin_failed", check=check.name, evaluator=check.evaluator, error=what)

    def _call(self, check: PluginCheck, state: PluginState, fn: Callable, args: tuple, call: _Call) -> tuple[bool, Any]:
        """(True, what ``fn(*args)`` returned) or (False, what it raised), its CPU added to
        ``state.cpu_ns``. Counts a raise. ``call``: the worker's record, set here for this
        call (no one looks at it until it is ``_current``, under the lock)."""
        gen = call.gen
        call.check, call.state, call.budget_ns, call.gc0 = check, state, self.budget_ns - state.cpu_ns, self._gc_ns
        call.cpu_seen, call.interrupted, call.done = -1, False, False
        call.wall0 = time.perf_counter_ns()
        try:
            with self._lock:  # against close() and the watchdog, which act on a call in progress
                if self._gen != gen:
                    return False, _STOPPED  # stopped between two calls: this thread finishes its item
                self._current = call
            try:
                value = fn(*args)
                ok = True
            except Overrun as e:
                value, ok = e, False
            except Exception as e:  # the plug-in's bug: its result on this run is undecided
                value, ok = e, False
                self._error(check, state, type(e).__name__)
            finally:
                wall = time.perf_counter_ns() - call.wall0
                with self._lock:
                    call.done = True
                    if self._gen != gen:
                        raise _Abandoned
                    self._current = None
        except Overrun as e:  # raised just as the call returned
            value, ok = e, False
            wall = time.perf_counter_ns() - call.wall0
            with self._lock:
                call.done = True
                if self._gen != gen:
                    raise _Abandoned from None
                self._current = None
        if wall <= self.budget_ns:  # ``_cpu_of``'s usual case, inline
            self._wall_since_mark += wall
            if self._wall_since_mark > self._remark_ns:
                self._cpu_mark = time.thread_time_ns()
                self._wall_since_mark = 0
            used = wall
        else:
            used = self._cpu_of(wall)
        state.cpu_ns += used
        if wall > HELD_NS and used - (self._gc_ns - call.gc0) > HELD_CPU_NS:
            held = self._gil_waited(call.wall0, call.wall0 + wall)
            if held > HELD_NS:
                # the watchdog waited for the GIL while this call computed: the call held it
                # (one call into C) and every thread of the process waited. The watchdog
                # judges it too, when it takes the GIL before this thread gets here (then
                # this thread ends)
                state.failed = "gil"
                self._count_overrun(check, "gil", _held(held), now=True)
                return False, Overrun()
        if call.interrupted and ok:
            ok, value = False, Overrun()
        return ok, value

    def _gil_waited(self, start: int, end: int) -> int:
        """How long of ``start``..``end`` (this thread's call) the watchdog waited for the GIL."""
        woke, took = self._watch_at[0], self._took
        return min(end if woke > took else took, end) - max(woke, start)

    def _cpu_of(self, wall_ns: int) -> int:
        """The CPU a call of ``wall_ns`` took, at most: its wall time, unless that is over the
        budget; then the thread's CPU since the last mark (which that call and calls worth at
        most a tenth of the budget since the mark make up)."""
        self._wall_since_mark += wall_ns
        if wall_ns <= self.budget_ns:
            if self._wall_since_mark > self._remark_ns:
                self._cpu_mark = time.thread_time_ns()
                self._wall_since_mark = 0
            return wall_ns
        now = time.thread_time_ns()
        cpu = now - self._cpu_mark
        self._cpu_mark = now
        self._wall_since_mark = 0
        return min(cpu, wall_ns)

    # ------------------------------------------------------------------ the watchdog

    def _nudge(self) -> None:
        """Wakes the watchdog from a wait without a limit (it waits so while there is no work)."""
        with self._lock:  # against the watchdog closing its pipe
            if self._nudge_w >= 0:
                try:
                    os.write(self._nudge_w, b"\0")
                except BlockingIOError:
                    pass  # the pipe is full of nudges: it wakes anyway

    def _watch(self) -> None:
        try:
            self._watch_calls()
        finally:
            with self._lock:
                os.close(self._nudge_r)
                os.close(self._nudge_w)
                self._nudge_r = self._nudge_w = -1

    def _watch_calls(self) -> None:
        while not self._stopping:
            worker = self._worker_ident
            before_cpu = self._cpu_of_thread(worker)
            # the wait for the GIL is what is timed, never the wait before it: a call that
            # holds the GIL from the first item on is seen as well as one that starts later
            _wait_readable(self._nudge_r, WATCH_INTERVAL_MS if self._busy or self._stuck else -1, self._watch_at)
            now = self._took = time.perf_counter_ns()
            waited = now - self._watch_at[0]  # a call that held the GIL kept this thread waiting so long
            # never let the GIL go between two timed waits: a call that began meanwhile could
            # hold it, and this thread would wait for it untimed. A lock held elsewhere would
            # let it go (the worker holds this one around each call's start and end): the
            # next look comes soon enough
            if not self._lock.acquire(blocking=False):
                continue
            try:
                self._look(now, waited, worker, before_cpu)
            finally:
                self._lock.release()

    def _look(self, now: int, waited: int, worker: int, before_cpu: int) -> None:
        """One look at the call in progress (lock held): ``waited`` for the GIL until ``now``;
        ``before_cpu``: ``worker``'s CPU clock before the wait."""
        self._end_stuck()
        call = self._current
        if call is None or call.done or call.gen != self._gen:
            return
        cpu = self._cpu_of_thread(call.ident)
        held = min(waited, now - call.wall0)
        if held > HELD_NS and (call.ident != worker or before_cpu < 0):
            # a worker started during the wait: its clock at its start (or last mark),
            # before this call began
            before_cpu = self._cpu_mark
        if held > HELD_NS and cpu >= 0 and cpu - before_cpu - (self._gc_ns - call.gc0) > HELD_CPU_NS:
            # this thread waited for the GIL while the plug-in's thread computed: its call
            # held it (one call into C) and every thread of the process waited
            self._abandon(call, held)
            return
        if now - call.wall0 > self.deadline_ns:
            self._abandon(call)
            return
        if cpu < 0:
            return
        if call.cpu_seen < 0:
            call.cpu_seen = cpu
        elif cpu - call.cpu_seen > max(call.budget_ns, 0):
            # again at each look while it runs on: a loop that swallows one goes on
            call.interrupted = True
            _set_async_exc(call.ident, Overrun)

    def _end_stuck(self) -> None:
        """Threads given up on that are still in their plug-in's call (lock held): told to end
        at each look, with an exception no ``except Exception`` catches, until they do. A
        sleeping one ends when its sleep does; a spinning one at its next bytecode."""
        left = []
        for call in self._stuck:
            if not call.done:
                _set_async_exc(call.ident, _Abandoned)
                left.append(call)
        self._stuck = left

    @staticmethod
    def _cpu_of_thread(ident: int) -> int:
        """A thread's CPU clock; -1 when it has none (it ended)."""
        if not ident:
            return -1
        try:
            return time.clock_gettime_ns(time.pthread_getcpuclockid(ident))
        except OSError:
            return -1

    def _abandon(self, call: _Call, held_ns: int = 0) -> None:
        """Give up on the call in progress (lock held): its result is undecided, a new thread
        takes the work on after it, and the stuck thread is told to end (``_end_stuck``).
        One that held the GIL (``held_ns``) is switched off at once: every thread waited."""
        call.interrupted = True
        call.state.failed = "deadline"
        what = _held(held_ns) if held_ns else f"did not return within {self.deadline_ns / 1e9:g}s"
        self._count_overrun(call.check, "gil" if held_ns else "deadline", what, now=bool(held_ns))
        self._abandoned += 1
        self._stuck.append(call)
        item = self._item
        self._item = None
        self._current = None
        self._gen += 1
        if isinstance(item, _Complete):
            k = item.pos
            _, _, placeholder = item.jobs[k]
            item.out[k] = _undecided(placeholder, f"the plug-in {what}")
            item.pos = k + 1
        if item is not None:
            self._q.appendleft(item)
        self._worker = None
        if not self._stopping:
            self._start_worker()

    # ------------------------------------------------------------------ scrape time

    def metrics(self) -> Iterator[Metric]:
        c = CounterMetricFamily("faultgate_check_overruns", describe("faultgate_check_overruns"),
                                labels=("check", "limit"))
        for (name, limit), n in sorted(self.overruns.items()):
            c.add_metric([name, limit], n)
        yield c
        c = CounterMetricFamily("faultgate_check_switched_off", describe("faultgate_check_switched_off"),
                                labels=("check",))
        for name, n in sorted(self.switched_off.items()):
            c.add_metric([name], n)
        yield c
        c = CounterMetricFamily("faultgate_check_cpu_seconds", describe("faultgate_check_cpu_seconds"),
                                labels=("check",))
        for name, n in sorted(self.cpu_ns.items()):
            c.add_metric([name], n / 1e9)
        yield c
        c = CounterMetricFamily("faultgate_plugin_queue_full", describe("faultgate_plugin_queue_full"),
                                labels=("work",))
        for work, n in self.queue_full.items():
            c.add_metric([work], n)
        yield c
        g = GaugeMetricFamily("faultgate_checks_off", describe("faultgate_checks_off"), labels=("check",))
        for name, off in sorted(self.off.items()):
            g.add_metric([name], 1 if off else 0)
        yield g
        g = GaugeMetricFamily("faultgate_plugin_queue", describe("faultgate_plugin_queue"))
        g.add_metric([], len(self._q))
        yield g


def _held(ns: int) -> str:
    return f"held the GIL in one call for {ns / 1e9:.2f}s or more, stalling the service"


def _short(e: BaseException) -> str:
    text = str(e)
    return text if len(text) <= 200 else text[:200] + "..."


def _undecided(placeholder: CheckResult, reason: str) -> CheckResult:
    return placeholder._replace(reason=f"undecided: {reason}", undecided=True, fired=False, confidence=0.0)


_RESULTS = RunVerdict._fields.index("results")
_new_tuple = tuple.__new__  # what ``RunVerdict._make`` calls, without its frame


def _with_result(v: RunVerdict, at: int, r: CheckResult) -> RunVerdict:
    """``v`` with ``r`` as its ``at``-th result: one plug-in's, without ``_replace`` (~2 us)."""
    results = list(v.results)
    results[at] = r
    fields = list(v)
    fields[_RESULTS] = tuple(results)
    return _new_tuple(RunVerdict, fields)


def _fill(v: RunVerdict, jobs: list[tuple[str, int, CheckResult]], out: list, early: tuple) -> RunVerdict:
    if len(jobs) == 1 and not early and jobs[0][0] == "results":
        return _with_result(v, jobs[0][1], out[0])
    results, shadow = list(v.results), list(v.shadow)
    for (field, i, _), r in zip(jobs, out):
        (results if field == "results" else shadow)[i] = r
    changes: dict[str, Any] = {"results": tuple(results)}
    if v.shadow:
        changes["shadow"] = tuple(shadow)
    if early:
        changes["early"] = v.early + early
    return v._replace(**changes)


class PluginMetrics(Collector):
    """The stage's counters and gauges, read at scrape time (a prometheus Collector)."""

    def __init__(self, stage: Callable[[], Isolation | None]) -> None:
        self._stage = stage

    def collect(self) -> Iterator[Metric]:
        s = self._stage()
        # without plug-ins, the families are there, empty (the queue at 0): a dashboard or
        # alert that reads them finds them on every replica
        yield from (s or _NONE).metrics()


class _NoPlugins:
    """What a service without plug-ins reports."""

    def __init__(self) -> None:
        self.overruns: dict = {}
        self.switched_off: dict = {}
        self.cpu_ns: dict = {}
        self.queue_full = {"observe": 0, "verdict": 0}
        self.off: dict = {}
        self._q: tuple = ()

    metrics = Isolation.metrics


_NONE = _NoPlugins()

__all__ = ["Isolation", "Overrun", "PluginMetrics", "RunKey", "pending_jobs"]
