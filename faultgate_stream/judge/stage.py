"""The live judge stage: judge questions asked after the rule verdict, off the ingestion path.

A ``VerdictConsumer`` beside the other sinks. For a run's first verdict it only decides
whether the run's questions may be asked (``judge.per_minute``, a sliding minute of calls)
and puts the run's key on a bounded queue (``judge.queue``), never waiting: the thread
that decided the run (a receiver's, or the completion scan) goes straight on. One worker
thread takes runs off the queue, reads the run from the store of decided runs
(``verdict/amend.py``), renders it (masked: the judge is remote), asks each question with
``judge.timeout`` per call, and hands the answers to the evaluator, which publishes them
as an amended verdict through the same path late spans take.

Nothing is dropped silently: every question that gets no answer is counted by reason in
``faultgate_judge_skipped_total`` (budget, queue_full, timeout, error, evicted, shutdown,
internal_error) and the run keeps its rule verdict, in which the judge check is absent:
not answered, never passed. A worker that dies is counted and takes readiness down
(``model/threads.py``), like every background thread.
"""
from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable

import structlog
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from faultgate_stream.judge.config import JudgeConfig
from faultgate_stream.judge.contract import Judge, JudgeError, JudgeTimeout, Question
from faultgate_stream.judge.render import render
from faultgate_stream.judge.route import SKIPPED, Router
from faultgate_stream.model.records import RunKey
from faultgate_stream.model.telemetry import Telemetry, describe
from faultgate_stream.model.threads import Threads
from faultgate_stream.model.verdict import CheckResult, EarlyFinding, RunVerdict
from faultgate_stream.verdict.evaluate import Evaluator

log = structlog.get_logger("faultgate_stream.judge")

MINUTE_S = 60.0
# The usual rule of thumb for English text and JSON under BPE tokenizers; used only when
# the endpoint does not say how many prompt tokens it read.
CHARS_PER_TOKEN = 4
# How often an idle worker looks at its stop flag.
POLL_S = 0.1


class JudgeStage:
    def __init__(self, config: JudgeConfig, judge: Judge, questions: Callable[[str], tuple[Question, ...]],
                 telemetry: Telemetry, threads: Threads, mask: Callable[[str], str] | None = None,
                 monotonic: Callable[[], float] = time.monotonic, router: Router | None = None) -> None:
        self.config = config
        self._router = router or Router(config.when, config.sample)
        self._routed = telemetry["faultgate_judge_routed_runs"]
        self._tokens = telemetry["faultgate_judge_tokens"]
        self.judge = judge
        self._questions = questions       # agent name -> the questions its runs get
        self._mask = mask
        self._now = monotonic
        self._threads = threads
        self._queue: queue.Queue[tuple[RunKey, tuple[Question, ...]]] = queue.Queue(maxsize=config.queue)
        self._calls: deque[float] = deque()  # when admitted questions were queued, within the last minute
        self._skipped = telemetry["faultgate_judge_skipped"]
        self._internal = telemetry["faultgate_internal_errors"].labels("judge")
        self._answers = telemetry["faultgate_judge_answers"]
        self._evaluator: Evaluator | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.by = f"judge:{judge.name}"

    def __len__(self) -> int:
        return self._queue.qsize()

    # -- the sink side: called by whoever published the verdict; never waits -------------

    def early(self, finding: EarlyFinding) -> None:
        """A judge reads whole runs."""

    def verdict(self, v: RunVerdict) -> None:
        if v.revision or v.setup_only:
            return  # questions are asked once per run, after its first verdict
        questions = self._questions(v.agent)
        if not questions:
            return
        route = self._router.route(v)
        self._routed.labels(route).inc()
        if route == SKIPPED:
            return
        n = len(questions)
        if self._stop.is_set():
            self._skip("shutdown", n)
            return
        now = self._now()
        while self._calls and self._calls[0] <= now - MINUTE_S:
            self._calls.popleft()
        if len(self._calls) + n > self.config.per_minute:
            self._skip("budget", n)
            return
        try:
            self._queue.put_nowait((v.key, questions))
        except queue.Full:
            self._skip("queue_full", n)
            return
        self._calls.extend([now] * n)

    def _skip(self, reason: str, n: int = 1) -> None:
        self._skipped.labels(reason).inc(n)

    # -- the worker ---------------------------------------------------------------------

    def start(self, evaluator: Evaluator) -> None:
        """Answers go to ``evaluator`` (its store of decided runs holds the runs to judge)."""
        self._evaluator = evaluator
        self._thread = self._threads.start("judge", self._run)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                key, questions = self._queue.get(timeout=POLL_S)
            except queue.Empty:
                continue
            try:
                self._judge(key, questions)
            except Exception:
                # a bug, never an answer about the run: counted and logged; the next run goes on
                self._skip("internal_error", len(questions))
                self._internal.inc()
                log.exception("judge_failed", run=str(key))

    def _judge(self, key: RunKey, questions: tuple[Question, ...]) -> None:
        evaluator = self._evaluator
        store = evaluator.decided if evaluator is not None else None
        run = store.snapshot(key) if store is not None else None
        if run is None:
            self._skip("evicted", len(questions))
            return
        state = render(run, self.judge.budget)
        if self.judge.remote and self._mask is not None:
            state = self._mask(state)
        results: list[CheckResult] = []
        for q in questions:
            if self._stop.is_set():
                self._skip("shutdown")
                continue
            try:
                a = self.judge.ask(state, q.text)
            except JudgeTimeout:
                self._count_tokens(state, q, None)
                self._skip("timeout")
                continue
            except JudgeError as e:
                self._count_tokens(state, q, None)
                self._skip("error")
                log.warning("judge_no_answer", run=str(key), check=q.check, reason=str(e))
                continue
            self._count_tokens(state, q, a.prompt_tokens)
            results.append(CheckResult(q.check, a.detected, a.confidence, f"{self.judge.name}: {a.reason}",
                                       kind="judge"))
        if not results:
            return
        if self._stop.is_set():
            self._skip("shutdown", len(results))  # the sinks may be closed by now
            return
        if evaluator.amend_judged(key, tuple(results), self.by) is None:
            self._skip("evicted", len(results))
            return
        for r in results:
            self._answers.labels(r.check, "fired" if r.fired else "passed").inc()

    def _count_tokens(self, state: str, q: Question, reported: int | None) -> None:
        """What one question sent: the endpoint's own count when its reply carried one, else
        ~4 characters a token of what was sent (the rendered run and the question), which
        is what the judge was given to read whether or not it answered."""
        if reported is not None and reported >= 0:
            self._tokens.labels("reported").inc(reported)
        else:
            self._tokens.labels("estimated").inc(-(-(len(state) + len(q.text)) // CHARS_PER_TOKEN))

    def stop(self, grace: float) -> None:
        """Stop asking: a call in progress gets ``grace`` seconds to end; what is still
        queued is counted as skipped for shutdown. Safe without ``start`` and twice."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(grace)
            self._thread = None
        while True:
            try:
                _, questions = self._queue.get_nowait()
            except queue.Empty:
                break
            self._skip("shutdown", len(questions))
        close = getattr(self.judge, "close", None)
        if close is not None:
            close()


class QueueGauge(Collector):
    """Runs waiting for the judge, read at scrape time (0 without a live judge)."""

    def __init__(self, stage: JudgeStage | None) -> None:
        self._stage = stage

    def collect(self):
        g = GaugeMetricFamily("faultgate_judge_queue_runs", describe("faultgate_judge_queue_runs"))
        g.add_metric([], len(self._stage) if self._stage is not None else 0)
        yield g
