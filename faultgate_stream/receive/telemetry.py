"""What the receivers record, per request, into the shared catalog."""
from __future__ import annotations

from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.read.otlp_logs import DecodedLogs
from faultgate_stream.read.otlp_proto import Decoded
from faultgate_stream.receive.outcome import Refusal


class ReceiverTelemetry:
    """Counts spans by what happened to them, so accepted + refused + rejected = received."""

    def __init__(self, telemetry: Telemetry, transport: str) -> None:
        self.transport = transport
        self._accepted = telemetry["faultgate_receiver_accepted_spans"].labels(transport)
        self._refused = telemetry["faultgate_receiver_refused_spans"]
        self._rejected = telemetry["faultgate_receiver_rejected_spans"]
        self._rejected_requests = telemetry["faultgate_receiver_rejected_requests"]
        self._internal = telemetry["faultgate_internal_errors"].labels("receive")

    def accepted(self, decoded: Decoded) -> None:
        self._accepted.inc(len(decoded.spans))
        self._rejected_spans(decoded)

    def _rejected_spans(self, decoded: Decoded) -> None:
        if decoded.rejected:
            for reason, n in decoded.reasons().items():
                self._rejected.labels(self.transport, reason).inc(n)

    def rejected_request(self, reason: str) -> None:
        self._rejected_requests.labels(self.transport, reason).inc()

    def internal_error(self) -> None:
        self._internal.inc()

    def refused(self, refusal: Refusal, decoded: Decoded | None) -> None:
        """A whole request refused: its spans (when it could be decoded) are counted as
        refused (retryable) or rejected; a request that could not be decoded is counted
        as a request, since its spans cannot be."""
        spans = len(decoded.spans) if decoded is not None else 0
        if decoded is not None:
            self._rejected_spans(decoded)
        if refusal.retryable:
            self._refused.labels(self.transport, refusal.reason).inc(spans)
        elif decoded is not None:
            self._rejected.labels(self.transport, refusal.reason).inc(spans)
        else:
            self.rejected_request(refusal.reason)


class LogsTelemetry:
    """``ReceiverTelemetry`` for log records: accepted + refused + rejected = received."""

    def __init__(self, telemetry: Telemetry, transport: str) -> None:
        self.transport = transport
        self._accepted = telemetry["faultgate_receiver_accepted_log_records"].labels(transport)
        self._refused = telemetry["faultgate_receiver_refused_log_records"]
        self._rejected = telemetry["faultgate_receiver_rejected_log_records"]
        self._rejected_requests = telemetry["faultgate_receiver_rejected_requests"]
        self._internal = telemetry["faultgate_internal_errors"].labels("receive")

    def accepted(self, decoded: DecodedLogs) -> None:
        self._accepted.inc(decoded.records - decoded.rejected)
        self._rejected_records(decoded)

    def _rejected_records(self, decoded: DecodedLogs) -> None:
        if decoded.rejected:
            for reason, n in decoded.reasons().items():
                self._rejected.labels(self.transport, reason).inc(n)

    def rejected_request(self, reason: str) -> None:
        self._rejected_requests.labels(self.transport, reason).inc()

    def internal_error(self) -> None:
        self._internal.inc()

    def refused(self, refusal: Refusal, decoded: DecodedLogs | None) -> None:
        records = decoded.records - decoded.rejected if decoded is not None else 0
        if decoded is not None:
            self._rejected_records(decoded)
        if refusal.retryable:
            self._refused.labels(self.transport, refusal.reason).inc(records)
        elif decoded is not None:
            self._rejected.labels(self.transport, refusal.reason).inc(records)
        else:
            self.rejected_request(refusal.reason)
