"""Recent verdicts by run, so a late root span carries the verdict its run already got."""
from __future__ import annotations

import threading
from collections import OrderedDict

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
        self._items: OrderedDict[RunKey, tuple[RunVerdict, bytes]] = OrderedDict()
        self._lock = threading.Lock()
        self.evictions = 0

    def put(self, v: RunVerdict) -> None:
        with self._lock:
            old = self._items.get(v.key)
            self._items[v.key] = (v, old[1] if old else b"")
            self._items.move_to_end(v.key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
                self.evictions += 1

    def get(self, key: RunKey) -> RunVerdict | None:
        with self._lock:
            item = self._items.get(key)
            return item[0] if item else None

    def keep_resource(self, key: RunKey, resource: bytes) -> None:
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items[key] = (item[0], resource)

    def resource(self, key: RunKey) -> bytes:
        with self._lock:
            item = self._items.get(key)
            return item[1] if item else b""
