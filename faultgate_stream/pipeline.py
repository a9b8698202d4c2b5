"""The offline wiring: the same assembler and evaluator the service runs, fed from files.

Spans go in as one batch per file chunk; end of input completes every run. No clock
ever moves, so no run completes early: a file's verdicts are the whole file's.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from faultgate_stream.assemble.assembler import Assembler
from faultgate_stream.checks.base import Check
from faultgate_stream.model.clock import ManualClock
from faultgate_stream.model.profile import RunProfile
from faultgate_stream.model.records import RunKey, SpanRecord
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import Completion, EarlyFinding, RunVerdict
from faultgate_stream.verdict.evaluate import Evaluator


class OfflineLimits:
    """The assembler's settings offline: the fields of ``AssembleConfig`` it reads. There
    is no upstream to push back on, so a file is held whole whatever its size, and no
    clock moves, so no timeout is ever reached. Not the config dataclass: ``check`` runs
    without importing ``dataclasses`` (tests/cli/test_startup.py)."""

    max_traces = max_spans_per_trace = decision_cache = 10**9
    max_bytes = decision_cache_bytes = 2**62
    root_grace = max_run_duration = idle_timeout = 10.0**9  # seconds
    on_full = "refuse"


OFFLINE_LIMITS = OfflineLimits()


class VerdictList:
    """A ``VerdictConsumer`` that keeps everything, in order."""

    def __init__(self) -> None:
        self.verdicts: list[RunVerdict] = []
        self.findings: list[EarlyFinding] = []

    def early(self, finding: EarlyFinding) -> None:
        self.findings.append(finding)

    def verdict(self, verdict: RunVerdict) -> None:
        self.verdicts.append(verdict)


class RunList:
    """A ``RunConsumer`` that keeps completed runs, for tools that read runs, not verdicts."""

    def __init__(self) -> None:
        self.runs: list[Run] = []

    def spans_arrived(self, spans: list[SpanRecord]) -> None:
        """Runs are read whole, once complete; a subclass that watches spans one at a time
        (``span_arrived``) hears of each."""
        if type(self).span_arrived is not RunList.span_arrived:
            for s in spans:
                self.span_arrived(s)

    def span_arrived(self, span: SpanRecord) -> None:
        """Runs are read whole, once complete."""

    def run_completed(self, run: Run) -> None:
        self.runs.append(run)

    def span_late(self, span: SpanRecord, decided: RunKey) -> None:
        """Offline input has no late spans: nothing completes before end of input."""


def assemble_runs(spans: Iterable[SpanRecord], contents: Iterable[SpanRecord] = ()) -> list[Run]:
    sink = RunList()
    assembler = Assembler(sink, ManualClock(), OFFLINE_LIMITS)
    assembler.add(spans)
    assembler.add_contents(contents)
    assembler.close_all(Completion.COMPLETE, remember=False)  # the end of the input: no span follows
    return sink.runs


class RunTap:
    """A ``RunConsumer`` in front of another: hands each completed run to ``seen`` before
    passing it on; everything else goes straight through."""

    def __init__(self, consumer: Evaluator, seen: Callable[[Run], None]) -> None:
        self._next = consumer
        self._seen = seen

    def run_completed(self, run: Run) -> None:
        self._seen(run)
        self._next.run_completed(run)

    def __getattr__(self, name: str):
        return getattr(self._next, name)


def check_spans(batches: Iterable[Iterable[SpanRecord]], checks: list[Check],
                contents: Iterable[Iterable[SpanRecord]] = (), *, early: bool = True,
                profile: Callable[[Run], RunProfile] | None = None,
                seen: Callable[[Run], None] | None = None, isolation: object = None) -> list[RunVerdict]:
    """Verdicts of the runs in ``batches`` of spans; ``contents`` are batches of content
    records from GenAI log events (``read.log_events``), joined to their spans by id.
    ``early=False``: the verdicts without their early findings, and no span observed for
    them (``checks/base.py``), for callers that report verdicts only (the ``check`` command:
    6% of its engine's time on the gate files). ``profile``: what works out each verdict's
    ``profile`` (``verdict/profile.py``), for drift and sessions. ``seen``: told of each
    completed run before it is judged (the HTML report draws its spans). ``isolation``: what
    plug-ins may spend (``checks.config.IsolationConfig``; its defaults when None)."""
    sink = VerdictList()
    evaluator = Evaluator(checks, sink, early=early, profile=profile, isolation=isolation)
    assembler = Assembler(evaluator if seen is None else RunTap(evaluator, seen), ManualClock(), OFFLINE_LIMITS)
    try:
        for batch in batches:
            assembler.add(batch)
        for batch in contents:
            assembler.add_contents(batch)
        assembler.close_all(Completion.COMPLETE, remember=False)  # the end of the input: no span follows
    finally:
        evaluator.close()  # plug-ins answer on their own thread: every verdict waits for them
    return [v for v in sink.verdicts if not v.setup_only]
