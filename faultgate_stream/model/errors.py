"""The two kinds of failure a stage can report, translated to statuses only at the edges.

``InputError`` is permanent: the same input fails again (an undecodable file or payload, a
malformed span), so retrying is pointless. ``CapacityError`` is retryable: a bound was
reached, and the same data may be accepted later.
"""
from __future__ import annotations


class InputError(ValueError):
    """Input that cannot be read. The message names what is wrong and where."""


class CapacityError(RuntimeError):
    """A capacity bound was reached; the sender should retry after ``retry_after_s``."""

    def __init__(self, message: str, *, bound: str, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.bound = bound
        self.retry_after_s = retry_after_s


class BoundError(InputError):
    """A request larger than a bound can ever hold (more new traces than ``max_traces``,
    more spans than the export queue): permanent, since waiting frees no room that would
    make it fit. The message names the limit, so the sender knows what to split."""

    def __init__(self, message: str, *, bound: str) -> None:
        super().__init__(message)
        self.bound = bound
