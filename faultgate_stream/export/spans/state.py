"""What the two sides of span export share: the tee in front of the assembler (``forward``)
and the verdict sink behind it (``sink``) work on the same queue, held roots and verdicts."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from faultgate_stream.export.spans.annotate import EvaluationKeys
from faultgate_stream.export.spans.cache import VerdictCache
from faultgate_stream.export.spans.config import SpansExportConfig
from faultgate_stream.export.spans.held import HeldSpans
from faultgate_stream.export.spans.queue import SendQueue
from faultgate_stream.model.telemetry import Telemetry


@dataclass(frozen=True)
class ExportState:
    config: SpansExportConfig
    telemetry: Telemetry
    redact: Callable[[str], str]
    queue: SendQueue
    held: HeldSpans
    cache: VerdictCache
    # the annex's keys of verdicts whose results name an evaluator, shared by both sides
    evaluation_keys: EvaluationKeys = field(default_factory=EvaluationKeys)

    @classmethod
    def build(cls, config: SpansExportConfig, telemetry: Telemetry, redact: Callable[[str], str]) -> "ExportState":
        queue = SendQueue(config.queue_spans, retry_after_s=1.0,
                          on_error=telemetry["faultgate_internal_errors"].labels("export").inc)
        return cls(config, telemetry, redact, queue, HeldSpans(), VerdictCache())
