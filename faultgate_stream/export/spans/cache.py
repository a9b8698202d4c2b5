"""Recent verdicts by run, so a late root span carries the verdict its run already got.

Each verdict is kept as it was published, taken out of the cyclic collector's lists
(``_native.untrack_acyclic``: a verdict is an immutable record built from its fields, so no
cycle passes through it). Ten thousand cached verdicts as tracked objects were ~110,000
objects, most of what every full collection walked in a long-running service (issue 12);
packing each into plain tuples and back, the form before, cost more than annotating its
root.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

from faultgate_stream._native import untrack_acyclic
from faultgate_stream.model.records import RunKey
from faultgate_stream.model.verdict import RunVerdict

# Late roots come seconds after their verdict (a max-duration close, a slow exporter); a
# few thousand recent runs cover that window at any rate this process can check.
DEFAULT_VERDICT_CACHE = 10_000


class VerdictCache:
    """Also keeps each run's root resource (its encoding): an amended verdict's evaluation
    records go out long after the root left, and name the same resource as the first ones."""

    def __init__(self, size: int = DEFAULT_VERDICT_CACHE) -> None:
        self.size = size
        # run key (as a plain tuple) -> (the verdict, its root's resource)
        self._items: OrderedDict[tuple[str, str], tuple[RunVerdict, bytes]] = OrderedDict()
        self._lock = threading.Lock()
        self.evictions = 0

    def put(self, v: RunVerdict, resource: bytes | None = None) -> None:
        """Keep ``v``, with its root's ``resource`` (None: the one kept before, if any)."""
        key = tuple(v.key)  # a plain tuple key: equal to the RunKey, and untracked
        with self._lock:
            if resource is None:
                old = self._items.get(key)
                resource = old[1] if old else b""
            self._items[key] = untrack_acyclic((v, resource))  # the verdict with it
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
                self.evictions += 1

    def get(self, key: RunKey) -> RunVerdict | None:
        with self._lock:
            item = self._items.get(key)
        return item[0] if item else None

    def resource(self, key: RunKey) -> bytes:
        with self._lock:
            item = self._items.get(key)
            return item[1] if item else b""
