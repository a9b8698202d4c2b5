"""Verdict stream settings."""
from __future__ import annotations

from dataclasses import dataclass

# A stream is for dashboards and on-call tools, not a fan-out bus: tens of subscribers.
# Each open stream holds one worker thread of the gRPC server that hosts it (sync gRPC),
# so the cap is also how many threads the stream can take.
DEFAULT_MAX_SUBSCRIBERS = 64
# Verdicts buffered per subscriber. A reader that falls further behind loses verdicts
# (counted) instead of growing memory or slowing the service.
DEFAULT_QUEUE_SIZE = 1000


@dataclass(frozen=True, kw_only=True)
class StreamConfig:
    max_subscribers: int = DEFAULT_MAX_SUBSCRIBERS
    queue_size: int = DEFAULT_QUEUE_SIZE

    def validate(self) -> list[str]:
        problems = []
        if self.max_subscribers < 1:
            problems.append("max_subscribers: must be >= 1")
        if self.queue_size < 1:
            problems.append("queue_size: must be >= 1")
        return problems
