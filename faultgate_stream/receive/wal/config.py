"""Durability settings (``durability.wal``). Empty ``dir`` = no write-ahead log."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from faultgate_stream.model.settings import BYTES, DURATION

# Disk the log may take. Covered records are deleted a segment at a time, so the log holds
# what arrived since the oldest run still in flight (or still in the export queue) began:
# at 1 MB/s of requests and the default max_run_duration (10 min) a run that never ends
# pins 600 MB. Size it as request bytes a second x the longest run you expect (README).
DEFAULT_MAX_BYTES = 1024 * 1024 * 1024
# One file of the log. Deletion frees whole segments, so a smaller one frees room sooner
# and a larger one costs fewer file creations; 64 MiB is about a second and a half of the
# live bench's export-on maximum (~48 MB/s). Never more than an eighth of max_bytes.
DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024
# How often what is decided and exported is checkpointed (and covered segments deleted).
# A crash replays at most what was finished in this window, plus what was in flight.
DEFAULT_CHECKPOINT_INTERVAL_S = 1.0
MIN_MAX_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class WalConfig:
    dir: str = ""          # "" disables the write-ahead log
    max_bytes: int = field(default=DEFAULT_MAX_BYTES, metadata=BYTES)
    # batch: an acknowledgement waits for the fsync that covers its request, one fsync for
    #        every request written while the last one ran (group commit);
    # always: an fsync of its own for every request, serialised (slower; the same guarantee);
    # off: written to the kernel, never synced: survives kill -9 and OOM kills, not a
    #      machine crash or power loss (what the kernel had not written yet is lost).
    fsync: Literal["batch", "always", "off"] = "batch"
    segment_bytes: int = field(default=DEFAULT_SEGMENT_BYTES, metadata=BYTES)
    checkpoint_interval: float = field(default=DEFAULT_CHECKPOINT_INTERVAL_S, metadata=DURATION)

    @property
    def enabled(self) -> bool:
        return bool(self.dir)

    @property
    def segment_limit(self) -> int:
        return max(1024 * 1024, min(self.segment_bytes, self.max_bytes // 8))

    def validate(self) -> list[str]:
        problems = []
        if self.max_bytes < MIN_MAX_BYTES:
            problems.append(f"max_bytes: must be at least {MIN_MAX_BYTES // (1024 * 1024)}MiB")
        if self.segment_bytes < 1024 * 1024:
            problems.append("segment_bytes: must be at least 1MiB")
        if not self.checkpoint_interval > 0:
            problems.append("checkpoint_interval: must be > 0")
        return problems


@dataclass(frozen=True, kw_only=True)
class DurabilityConfig:
    wal: WalConfig = WalConfig()
