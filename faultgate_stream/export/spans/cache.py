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
    def __init__(self, size: int = DEFAULT_VERDICT_CACHE) -> None:
        self.size = size
        self._items: OrderedDict[RunKey, RunVerdict] = OrderedDict()
        self._lock = threading.Lock()
        self.evictions = 0

    def put(self, v: RunVerdict) -> None:
        with self._lock:
            self._items[v.key] = v
            self._items.move_to_end(v.key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
                self.evictions += 1

    def get(self, key: RunKey) -> RunVerdict | None:
        with self._lock:
            return self._items.get(key)
