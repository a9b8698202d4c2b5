"""One request's journey, the same for both transports: decode, hand on, count, and on
failure say how to refuse it (translated into a status by each transport)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from faultgate_stream.model.consumers import ContentConsumer, SpanConsumer
from faultgate_stream.read.otlp_logs import DecodedLogs
from faultgate_stream.read.otlp_proto import Decoded
from faultgate_stream.receive.outcome import Refusal, classify
from faultgate_stream.receive.telemetry import LogsTelemetry, ReceiverTelemetry

log = structlog.get_logger("faultgate_stream.receive")


def take(decode: Callable[[], tuple[Any, Decoded]], consumer: SpanConsumer,
         telemetry: ReceiverTelemetry) -> tuple[Decoded | None, Refusal | None]:
    """(decoded, None) when the spans were taken, or (decoded if it got that far, refusal)."""
    decoded = None
    try:
        otlp_request, decoded = decode()
        if decoded.spans:
            consumer.consume(decoded.spans, otlp_request)
    except Exception as e:  # classified in one place: receive/outcome.py
        return decoded, refuse(e, telemetry, decoded)
    telemetry.accepted(decoded)
    return decoded, None


def take_logs(decode: Callable[[], tuple[Any, DecodedLogs]], consumer: ContentConsumer,
              telemetry: LogsTelemetry) -> tuple[DecodedLogs | None, Refusal | None]:
    """``take`` for a logs request: its GenAI content goes to ``consumer``, the rest of its
    records are acknowledged and counted (they are not ours to keep)."""
    decoded = None
    try:
        _, decoded = decode()
        if decoded.contents:
            consumer.consume_contents(decoded.contents)
    except Exception as e:  # classified in one place: receive/outcome.py
        return decoded, refuse(e, telemetry, decoded)
    telemetry.accepted(decoded)
    return decoded, None


def refuse(error: Exception, telemetry: ReceiverTelemetry | LogsTelemetry, decoded: Any = None) -> Refusal:
    """How to refuse after ``error``, counted (and logged when it is our own fault)."""
    refusal = classify(error)
    if refusal.reason == "internal_error":
        log.exception("export_failed", transport=telemetry.transport)
    telemetry.refused(refusal, decoded)
    return refusal
