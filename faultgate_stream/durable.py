"""Wiring for the durable sources (Kafka, and the write-ahead log): what they ask of the stages after them, answered
from the live assembler and the span-export state. Only the service builds this."""
from __future__ import annotations

from collections.abc import Iterable

from faultgate_stream.assemble.live import LiveAssembler
from faultgate_stream.export.spans.state import ExportState
from faultgate_stream.model.telemetry import Telemetry


class ServiceProgress:
    """The source's ``offsets.Progress``: runs in flight from the assembler, export from
    the send queue; without span export, a decided run has nothing left to wait for."""

    def __init__(self, assembler: LiveAssembler, export: ExportState | None, telemetry: Telemetry) -> None:
        self._asm = assembler
        self._export = export
        self._t = telemetry

    def undecided(self, trace_ids: Iterable[str]) -> bool:
        return self._asm.holds_any(trace_ids)

    def export_mark(self) -> int:
        return self._export.queue.mark() if self._export is not None else 0

    def exported(self, mark: int) -> bool:
        return self._export.queue.passed(mark) if self._export is not None else True

    def drop(self, trace_ids: Iterable[str]) -> int:
        traces = set(trace_ids)
        spans = self._asm.drop_traces(traces)
        if self._export is not None:
            # their roots were held for verdicts that will now come from the new owner: the
            # room goes back, and the spans are counted so that the export equation holds
            held = self._export.held.release_traces(traces)
            if held:
                self._export.queue.release(len(held), failed="handed_over")
        return spans
