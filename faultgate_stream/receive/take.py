"""One request's journey, the same for both transports: decode, hand on, count, and on
failure say how to refuse it (translated into a status by each transport)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from faultgate_stream.model.consumers import ContentConsumer, SpanConsumer
from faultgate_stream.read.otlp_logs import DecodedLogs
from faultgate_stream.read.otlp_proto import Decoded
from faultgate_stream.receive.log_throttle import Throttle
from faultgate_stream.receive.outcome import Refusal, classify
from faultgate_stream.receive.telemetry import LogsTelemetry, ReceiverTelemetry

log = structlog.get_logger("faultgate_stream.receive")
# one line per kind of bug per interval: a storm of one bad input must not become a storm
# of identical tracebacks (each is still counted: faultgate_internal_errors_total and the
# refusal metrics)
_internal_errors = Throttle()


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
        request, decoded = decode()
        if decoded.contents:
            consumer.consume_contents(decoded.contents, request)
    except Exception as e:  # classified in one place: receive/outcome.py
        return decoded, refuse(e, telemetry, decoded)
    telemetry.accepted(decoded)
    return decoded, None


def refuse(error: Exception, telemetry: ReceiverTelemetry | LogsTelemetry, decoded: Any = None) -> Refusal:
    """How to refuse after ``error``, counted (and logged when it is our own fault)."""
    refusal = classify(error)
    if refusal.reason == "internal_error":
        telemetry.internal_error()
        suppressed = _internal_errors.allow((telemetry.transport, type(error).__name__, str(error)[:200]))
        if suppressed is not None:
            # what happened: a request we received could not be taken because of a bug of
            # ours (not an export, which is the exporter's event)
            log.exception("receive_internal_error", transport=telemetry.transport,
                          error_type=type(error).__name__, similar_suppressed=suppressed)
    telemetry.refused(refusal, decoded)
    return refusal
