"""What the group has *read* of a partition, kept in the commit's metadata.

Offsets say where to resume; they cannot say which of the re-read messages already led to
a verdict before a crash. So before a replica reads at or past its lease it commits again
(the same safe offset) with a lease further on, and only then reads on: the lease is always
past every message any owner handed on. A new owner counts verdicts of runs with spans
below the lease it found as *replayed*: the downstream may already hold them (idempotent
by run key there). Runs re-read below the lease that were never decided before are counted
too, so the count is an upper bound on duplicates, never less.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_PREFIX = "faultgate-stream lease="
_LEASE = re.compile(r"^faultgate-stream lease=(\d{1,19})$")


def encode(lease: int) -> str:
    return f"{_PREFIX}{lease}"


def decode(metadata: str | None) -> int | None:
    """The lease in a commit's metadata, or None when there is none (or not ours)."""
    m = _LEASE.match(metadata or "")
    return int(m.group(1)) if m else None


@dataclass(slots=True)
class Lease:
    """One owned partition's lease: ``replay_below`` as found at assignment, ``granted``
    as committed by us (we may hand on messages below it)."""

    replay_below: int
    granted: int = -1
    # the group's record could not be read at assignment: everything re-read counts as a
    # replay (an over-count is honest; an under-count would hide duplicates)
    unknown: bool = False

    def replayed(self, offset: int) -> bool:
        return self.unknown or offset < self.replay_below

    def covers(self, offset: int) -> bool:
        return offset < self.granted

    def extended(self, offset: int, block: int) -> int:
        """The next lease to commit before reading ``offset``: never below what earlier
        owners had read, or their re-read runs would stop being counted after a second crash."""
        return max(self.replay_below, self.granted, offset + block)
