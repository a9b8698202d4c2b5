"""Assembler settings. Zero never means "unlimited": every bound is a number."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from faultgate_stream.model.settings import BYTES, DURATION

# Children usually reach a collector before their root (a span is exported when it ends,
# and the root ends last), so a run is complete soon after its root arrives; two seconds
# covers one BatchSpanProcessor flush interval (5 s max, 1 s typical) of stragglers.
DEFAULT_ROOT_GRACE_S = 2.0
# An agent run that has not produced its root after this long is closed anyway, so that a
# lost root span cannot hold memory (and hide a verdict) forever.
DEFAULT_MAX_RUN_DURATION_S = 600.0
# A fragment whose root never arrives (sampled out, lost upstream) is closed as an orphan
# after this long without a new span.
DEFAULT_IDLE_TIMEOUT_S = 60.0
DEFAULT_MAX_TRACES = 20_000
DEFAULT_MAX_SPANS_PER_TRACE = 10_000
DEFAULT_MAX_BYTES = 512 * 1024 * 1024
# Remembers decided traces so that a span arriving after the verdict is counted as late
# (and carries the earlier verdict) instead of opening a second, partial run.
DEFAULT_DECISION_CACHE = 100_000
# ... and at most this many bytes of what it remembers (span ids of decided runs and of
# their late spans): 2 M late spans into one trace added 200 MB without it (issue 9,
# defect 9). Counted as the packed Python form cost (~490 B per 16-span trace; the compiled
# cache, native/core/src/assemble/decided.rs, keeps that accounting and costs less), 16 MiB
# holds about 34,000 such traces: more than 64 MiB held as dicts of id strings (~24,700),
# and a cache that is full within a minute and a half at the bench's half rate.
DEFAULT_DECISION_CACHE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class AssembleConfig:
    root_grace: float = field(default=DEFAULT_ROOT_GRACE_S, metadata=DURATION)
    max_run_duration: float = field(default=DEFAULT_MAX_RUN_DURATION_S, metadata=DURATION)
    idle_timeout: float = field(default=DEFAULT_IDLE_TIMEOUT_S, metadata=DURATION)
    max_traces: int = DEFAULT_MAX_TRACES              # traces with runs in flight
    max_spans_per_trace: int = DEFAULT_MAX_SPANS_PER_TRACE
    max_bytes: int = field(default=DEFAULT_MAX_BYTES, metadata=BYTES)  # approximate bytes of spans held
    # At a bound: refuse new data with a retryable error, or close the oldest run early.
    on_full: Literal["refuse", "evict"] = "refuse"
    decision_cache: int = DEFAULT_DECISION_CACHE
    decision_cache_bytes: int = field(default=DEFAULT_DECISION_CACHE_BYTES, metadata=BYTES)

    def validate(self) -> list[str]:
        problems = []
        for name in ("root_grace", "max_run_duration", "idle_timeout"):
            if not getattr(self, name) >= 0:
                problems.append(f"{name}: must be a number >= 0")
        for name in ("max_traces", "max_spans_per_trace", "max_bytes", "decision_cache", "decision_cache_bytes"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                problems.append(f"{name}: must be a whole number >= 1")
        if self.on_full not in ("refuse", "evict"):
            problems.append(f"on_full: must be 'refuse' or 'evict', not {self.on_full!r}")
        return problems
