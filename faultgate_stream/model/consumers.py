"""The one-method-per-event interfaces between stages. Data flows one way: a stage gets
its next consumer at construction and calls it; no stage imports a later one.

Ownership: records passed to a consumer are immutable and may be kept by it.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from faultgate_stream.model.records import RunKey, SpanRecord



def _log() -> Any:
    # imported on first use: the offline command never logs a sink failure, and loading
    # structlog (and the asyncio it imports) was a tenth of its start-up
    import structlog

    return structlog.get_logger("faultgate_stream.verdict")

if TYPE_CHECKING:
    from faultgate_stream.model.run import Run
    from faultgate_stream.model.verdict import EarlyFinding, RunVerdict


class RunConsumer(Protocol):
    """What the assembler feeds: the spans it accepts, as they arrive; each run when it
    completes; and each span that arrives after its run's verdict.

    ``spans_arrived`` is called once per batch with the spans accepted from it, in arrival
    order (a batch's late spans and the runs it closes early are reported between its
    accepted spans, in the order they happened): one call instead of one per span, so the
    consumer loops over the spans itself."""

    def spans_arrived(self, spans: list[SpanRecord]) -> None: ...

    def run_completed(self, run: Run) -> None: ...

    def span_late(self, span: SpanRecord, decided: RunKey) -> None: ...


class VerdictConsumer(Protocol):
    """What evaluation feeds: early findings the moment they are known, then the verdict."""

    def early(self, finding: EarlyFinding) -> None: ...

    def verdict(self, verdict: RunVerdict) -> None: ...


class SpanConsumer(Protocol):
    """What a receiver feeds: decoded spans, and the parsed request they came in (for
    pass-through). Raises ``CapacityError`` (nothing taken) when the data must be refused
    retryably; once it returns, the spans and the request are the consumer's."""

    def consume(self, spans: list[SpanRecord], request: Any = None) -> object: ...


class ContentConsumer(Protocol):
    """What a logs receiver feeds: content records from GenAI log events (``read.log_events``),
    to be joined to their spans, and the parsed logs request they came in (None from JSON).
    Raises ``CapacityError`` (nothing taken) like ``SpanConsumer``."""

    def consume_contents(self, contents: list[SpanRecord], request: Any = None) -> object: ...


class VerdictFanout:
    """One ``VerdictConsumer`` that hands every event to several independent sinks. A sink
    that raises (a bug) is logged and, with ``on_error``, counted; the other sinks still
    get the event, and the caller (the completion scan) goes on."""

    def __init__(self, sinks: list[VerdictConsumer], on_error: Callable[[str], None] | None = None) -> None:
        self.sinks = sinks
        self._on_error = on_error

    def _failed(self, sink: object) -> None:
        name = type(sink).__name__
        _log().exception("sink_failed", sink=name)
        if self._on_error is not None:
            self._on_error(name)

    def early(self, finding: EarlyFinding) -> None:
        for s in self.sinks:
            try:
                s.early(finding)
            except Exception:
                self._failed(s)

    def verdict(self, verdict: RunVerdict) -> None:
        sinks = self.sinks
        if verdict.setup_only:
            # a trace that is not a run only releases its spans; no other sink hears of it
            sinks = [s for s in sinks if getattr(s, "releases_spans", False)]
        for s in sinks:
            try:
                s.verdict(verdict)
            except Exception:
                self._failed(s)
