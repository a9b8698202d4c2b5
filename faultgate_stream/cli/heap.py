"""The long-running process's garbage collector, set once the service is built (the
offline command's: ``one_pass``).

Everything built at start (modules, config, compiled patterns, the gRPC server, the
metrics registry) lives as long as the process, and each full collection walked it again.
``gc.freeze()`` moves it out of the collector's generations for good: reference counting
still frees it, the collector just no longer looks. Long-lived run state is kept out of
the collector's reach by its shape instead: the decision cache is compiled
(``native/core/src/assemble/decided.rs``: Rust values the collector never sees), the decided
verdicts untracked (``untrack_acyclic``, ``native/py/src/python/collector.rs``: the export's
verdict cache and the amendment store keep the same objects), held roots bytes, and the
records of the spans in flight are made untracked by the reader (``untracked`` in
``native/core/src/read/conventions.rs``: at the maximum rate every young and middle collection
walked them, 17% of the CPU); the amendment store keeps those same records, and untracks
any built in Python (``verdict/amend.py``). A tuple subclass, a dataclass or a tuple
holding a dict stays tracked for good; these do not, so
full collections stay as cheap when the caches are full as when empty (issue 12: ~190,000
tracked objects at half load became ~50,000, and full collections of 100-230 ms, ~40 ms);
``bench/live.py --soak`` is how to see it.

**When it collects.** With CPython's default thresholds (700, 10, 10) the collector ran
wherever allocation crossed them: in receiver threads and inside completion scans. At
4,700 spans/s (``bench/live.py``'s workload, export on) that was 26 young collections a
second, a middle one (~7 ms of CPU) every 0.4 s and a full one (~47 ms) every 4.5 s, 5.0 s
of collector CPU in 118 s (9 µs a span), and more than half the scans held a collection,
which every run after it in that scan waited for. Now the completion ticker collects
between scans (``Gaps``, through ``LiveAssembler.between_scans``), in the time before the
next run is due: the young generation at every gap, the middle one every tenth, a full
collection once a minute, each only in a gap long enough for it (6.1-6.4 µs a span, and
3 scans in 2,083 held a collection). The automatic young thresholds stay as a backstop for
a ticker that finds no gap (overload), set high so that they rarely fire before the gaps
do. Reference counting frees everything that is not a cycle at once whatever the collector
does; what waits for a collection is cyclic garbage only, for a gap, ten gaps or a minute
(two at most).

**What the C allocator keeps.** After the full collection, ``malloc_trim(0)`` hands back to
the system the pages glibc's arenas hold free: at half load they held 50-57 MB free of
77-86 MB (``mallinfo2``), the ~290 KB requests parsed and freed by whichever gRPC thread
took them, spread over glibc's arenas (up to 8 a core), with ``MALLOC_TRIM_THRESHOLD_``
(the bench sets 128 MB, as the reference did) keeping glibc from trimming by itself. One
trim, measured: 9 MB back in 1.2 ms. RSS then follows what the service holds rather than
the allocator's high-water mark.
"""
from __future__ import annotations

import gc
import time
from collections.abc import Callable

# Automatic collection, the backstop: a young collection once this many more tracked
# objects were made than freed (CPython's default is 700), a middle one every tenth. Full
# collections are the ticker's alone: CPython counts a full collection due after
# ``threshold2`` middle ones, the ticker's own middle collections included, so with any
# reachable value every automatic young collection turns full once the ticker has gone
# that many middle ones without one (tests/cli/test_heap.py shows it).
BACKSTOP = (10_000, 10, 1 << 30)
# The gap each generation needs before the next run is due, about twice what collecting it
# took at half load (bench/live.py's workload, 4,700 spans/s, ~2,600 spans in flight): the
# young one ~2 ms of CPU, the middle one (young and middle, all spans in flight) ~15, a
# full one ~35-56 (its gap is shorter than twice that: with a tick of 100 ms the next run
# at half load is always due within 100 ms). A shorter gap is left alone: the next scan
# is about to start.
MIN_GAP_NS = 5_000_000
MIDDLE_GAP_NS = 30_000_000
FULL_GAP_NS = 60_000_000
# A middle collection after this many young ones (CPython's own threshold1).
MIDDLE_EVERY = 10
# A full collection once this long has passed since the last, in the first gap long enough;
# an overloaded ticker may find none, so after twice as long it collects at its next turn
# whatever the gap: cyclic garbage waits two minutes at most.
FULL_EVERY_S = 60.0


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS)."""
    # imported here: ctypes.util costs the offline command ~20 ms of start-up (one_pass)
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


def settle() -> int:
    """Freeze what exists now and set the backstop thresholds; returns how many objects
    the collector will skip."""
    gc.collect()  # what start-up left as garbage goes now, not frozen in for good
    gc.freeze()
    gc.set_threshold(*BACKSTOP)
    return gc.get_freeze_count()


def one_pass() -> None:
    """The offline command's collector: what the imports made frozen (a full collection
    no longer walks every function and class loaded: callgrind, 4.7% of the command's
    instructions on a gate file) and the backstop thresholds, without a ticker: a command
    of one pass has no gaps to collect in, and needs none. A check pass makes no reference
    cycles (tests/cli/test_heap.py), so the young collections CPython's thresholds ran
    every 700 objects found nothing to free; they were ~3% of the engine's time on the
    gate files (bench/offline.py, which runs our engine after this, as the command does)."""
    gc.freeze()
    gc.set_threshold(*BACKSTOP)


class Gaps:
    """The collector run in the completion ticker's idle time: call with the nanoseconds
    until the next run is due; returns the generation collected, or None."""

    def __init__(self, full_every_s: float = FULL_EVERY_S, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._full_every = full_every_s
        self._now = monotonic
        self._last_full = monotonic()
        self._trim = _malloc_trim()
        self.trims = 0

    def __call__(self, free_ns: int) -> int | None:
        now = self._now()
        since = now - self._last_full
        overdue = since >= 2 * self._full_every
        if free_ns < MIN_GAP_NS and not overdue:
            return None
        if since >= self._full_every and (free_ns >= FULL_GAP_NS or overdue):
            generation = 2
            self._last_full = now
        elif gc.get_count()[1] >= MIDDLE_EVERY and free_ns >= MIDDLE_GAP_NS:  # young ones since the last middle one
            generation = 1
        else:
            generation = 0
        gc.collect(generation)
        if generation == 2 and self._trim is not None:
            # what the C allocator holds free goes back to the system (see the module's
            # docstring); ctypes lets go of the GIL for the call, ~1-2 ms at half load
            self._trim(0)
            self.trims += 1
        return generation
