"""What to tell the sender, decided once for both transports.

The one place that classifies failures (the collector's ``internal/errors``):
- ``PayloadTooLarge`` -> RESOURCE_EXHAUSTED without RetryInfo (not retried) / 413;
- ``BoundError`` (a request no bound can ever hold) -> RESOURCE_EXHAUSTED without
  RetryInfo / 413 (not retried), naming the limit;
- ``TooDeep`` (JSON nested past the bound, read/bounds.py) -> INVALID_ARGUMENT / 400,
  naming the limit;
- ``InputError`` -> INVALID_ARGUMENT / 400 (not retried);
- ``CapacityError`` -> UNAVAILABLE with RetryInfo / 503 with Retry-After (retried);
- anything unexpected -> UNAVAILABLE / 503: the sender keeps the data and retries, so a
  bug here costs a retry, never a span. It is counted in faultgate_internal_errors_total
  and logged with its class (receive/take.py). Input never gets here: every problem a
  reader finds in its input is an ``InputError`` (the fuzz tests hold them to it).
"""
from __future__ import annotations

from dataclasses import dataclass

import grpc

from faultgate_stream.model.errors import BoundError, CapacityError, InputError
from faultgate_stream.read.bounds import TooDeep
from faultgate_stream.receive.decode import PayloadTooLarge


@dataclass(frozen=True)
class Refusal:
    grpc_code: grpc.StatusCode
    http_status: int
    message: str
    reason: str                      # the metric label
    retry_after_s: float | None = None

    @property
    def retryable(self) -> bool:
        return self.retry_after_s is not None


def classify(err: Exception) -> Refusal:
    if isinstance(err, PayloadTooLarge):
        return Refusal(grpc.StatusCode.RESOURCE_EXHAUSTED, 413, str(err), "too_large")
    if isinstance(err, BoundError):
        return Refusal(grpc.StatusCode.RESOURCE_EXHAUSTED, 413, str(err), f"over_{err.bound}")
    if isinstance(err, TooDeep):
        return Refusal(grpc.StatusCode.INVALID_ARGUMENT, 400, str(err), "too_deep")
    if isinstance(err, InputError):
        return Refusal(grpc.StatusCode.INVALID_ARGUMENT, 400, str(err), "undecodable")
    if isinstance(err, CapacityError):
        return Refusal(grpc.StatusCode.UNAVAILABLE, 503, str(err), err.bound, err.retry_after_s)
    return Refusal(grpc.StatusCode.UNAVAILABLE, 503, f"internal error: {type(err).__name__}", "internal_error", 1.0)
