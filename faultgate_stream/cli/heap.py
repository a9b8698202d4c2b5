"""The long-running process's garbage collector, set once the service is built.

Everything built at start (modules, config, compiled patterns, the gRPC server, the
metrics registry) lives as long as the process, and each full collection walked it again.
``gc.freeze()`` moves it out of the collector's generations for good: reference counting
still frees it, the collector just no longer looks. Long-lived run state is kept out of
the collector's reach by its shape instead: the decision cache holds ``bytearray``s
(``assemble/decided.py``), the export's verdict cache and the amendment store flat plain
tuples, held roots bytes. A tuple subclass, a dataclass or a tuple holding a dict stays
tracked for good; these do not, so full collections stay as cheap when the caches are full
as when empty (issue 12: ~190,000 tracked objects at half load became ~50,000, and full
collections of 100-230 ms, ~40 ms); ``bench/live.py --soak`` is how to see it.
"""
from __future__ import annotations

import gc


def settle() -> int:
    """Freeze what exists now; returns how many objects the collector will skip."""
    gc.collect()  # what start-up left as garbage goes now, not frozen in for good
    gc.freeze()
    return gc.get_freeze_count()
