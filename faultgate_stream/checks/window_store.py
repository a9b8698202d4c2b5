"""Cross-run counts for windowed budgets: a bounded store of timed events, by key.

Checks are built once and shared by every run, and keep nothing between runs. A budget
that counts over a session or an agent (``per: session``, a refund total per customer per
day) needs what earlier runs did, so that state lives here, in one object the service
(or the offline command) builds and hands to the checks that need it.

A key is (namespace, budget, scope value, argument value): the namespace keeps apart the
same budget in two bindings (and a shadow policy from the enforced one); the budget is its
definition, so a reload that keeps a budget keeps its counts. Each key holds events
``(span start ns, amount)`` sorted by time, each tagged with the run that made it: a run
recorded again (its verdict amended) replaces its own events instead of adding to them,
and a run reads back only the slice of time its own calls' windows cover, as times and
running sums (``Slice``), so a window's total is two bisections.

Bounded, and every bound counted:

- ``max_keys`` keys; past it the least recently recorded key is dropped whole
  (``evicted_keys``, its events in ``evicted_events``);
- ``max_events_per_key`` events per key; past it the oldest by span time go
  (``evicted_events``);
- events older than the newest of their key minus the budget's window can no longer
  count for a later call, and are dropped (``expired_events``, not a bound);
- scope and argument values come from traffic: past ``MAX_VALUE_CHARS`` a value is kept
  as a hash, so a key's size does not depend on what a sender wrote.

Thread-safe: live, runs complete on more than one thread.

Approximate by nature (README, "Windowed budgets"): a run counts what was recorded before
its verdict, so of two runs of one session decided at once, the first does not see the
second; a replica sees only the runs routed to it; and a run much older than the newest
of its key finds the events it would have counted expired.
"""
from __future__ import annotations

import hashlib
import threading
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Sequence
from itertools import accumulate
from typing import NamedTuple

# A key's values past this many characters are kept as their sha256: session ids are short,
# and a 10 kB one should cost what a short one does.
MAX_VALUE_CHARS = 128
DEFAULT_MAX_KEYS = 100_000
# A budget of N calls needs N + 1 events inside its window to be exact; budgets above this
# undercount once a key holds this many (counted in evicted_events).
DEFAULT_MAX_EVENTS_PER_KEY = 1024


class Event(NamedTuple):
    t_ns: int      # the call's span start time: counts are by span time, not arrival
    amount: float  # 1 for a call; the argument's value for a running total


class StoreKey(NamedTuple):
    namespace: str
    budget: str
    scope: str
    value: str


def bounded_value(v: str) -> str:
    if len(v) <= MAX_VALUE_CHARS:
        return v
    return "sha256:" + hashlib.sha256(v.encode("utf-8", "surrogatepass")).hexdigest()


class Slice(NamedTuple):
    """Other runs' events in a span of time: their start times, sorted, and the running sum
    of their amounts (``cum[i]`` is the sum of the first ``i``), so the total of any window
    is two bisections and a subtraction."""

    times: list[int]
    cum: list[float]

    def total(self, after_ns: int | None, until_ns: int) -> tuple[float, int]:
        """(sum, count) of the events with ``after_ns < t <= until_ns``."""
        hi = bisect_right(self.times, until_ns)
        lo = 0 if after_ns is None else bisect_right(self.times, after_ns, 0, hi)
        return self.cum[hi] - self.cum[lo], hi - lo


class _Entry:
    """One key's events, sorted by time, in three parallel lists: a window is a slice found
    by bisection, the oldest are the front (every bound is one slice deletion), and the
    slices are copied and summed in C (measured: a run's read of a full 1,024-event key
    went from ~1 ms with a list of tuples built and sorted per run to tens of us)."""

    __slots__ = ("times", "amounts", "runs", "run_ids")

    def __init__(self) -> None:
        self.times: list[int] = []
        self.amounts: list[float] = []
        self.runs: list[str] = []     # the run each event came from
        self.run_ids: set[str] = set()  # runs that may have events here (trims leave ids)

    def __len__(self) -> int:
        return len(self.times)

    def drop_front(self, n: int) -> None:
        del self.times[:n], self.amounts[:n], self.runs[:n]

    def drop_run(self, run_id: str) -> int:
        keep = [i for i, r in enumerate(self.runs) if r != run_id]
        gone = len(self.runs) - len(keep)
        if gone:
            self.times = [self.times[i] for i in keep]
            self.amounts = [self.amounts[i] for i in keep]
            self.runs = [self.runs[i] for i in keep]
        self.run_ids.discard(run_id)
        return gone

    def add(self, t: int, amount: float, run_id: str) -> None:
        at = bisect_right(self.times, t)
        self.times.insert(at, t)
        self.amounts.insert(at, amount)
        self.runs.insert(at, run_id)


class WindowStore:
    def __init__(self, *, max_keys: int = DEFAULT_MAX_KEYS,
                 max_events_per_key: int = DEFAULT_MAX_EVENTS_PER_KEY) -> None:
        if max_keys < 1 or max_events_per_key < 1:
            raise ValueError("a window store needs room for at least one key and one event")
        self.max_keys = max_keys
        self.max_events_per_key = max_events_per_key
        self._keys: OrderedDict[StoreKey, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self.events = 0
        self.evicted_keys = 0
        self.evicted_events = 0
        self.expired_events = 0

    def __len__(self) -> int:
        return len(self._keys)

    def exchange(self, key: StoreKey, run_id: str, own: Sequence[Event], window_ns: int | None,
                 after_ns: int | None = None, until_ns: int | None = None) -> Slice:
        """The events other runs recorded under ``key`` with ``after_ns < t <= until_ns``
        (either end open when None), then ``own`` recorded as ``run_id``'s (replacing what
        that run recorded before), in one step. ``window_ns`` is the budget's window: events
        older than the key's newest minus it are dropped."""
        with self._lock:
            entry = self._keys.get(key)
            if entry is None:
                entry = self._keys[key] = _Entry()
            else:
                self._keys.move_to_end(key)
            if run_id in entry.run_ids:  # judged again (an amended verdict): its old events go
                self.events -= entry.drop_run(run_id)
            times = entry.times
            lo = 0 if after_ns is None else bisect_right(times, after_ns)
            hi = len(times) if until_ns is None else bisect_right(times, until_ns)
            found = Slice(times[lo:hi], [0.0, *accumulate(entry.amounts[lo:hi])])
            if own:
                entry.run_ids.add(run_id)
                for t, a in own:
                    entry.add(t, a, run_id)
                self.events += len(own)
            self._trim(entry, window_ns)
            if not entry.times:
                del self._keys[key]
            while len(self._keys) > self.max_keys:
                _, dropped = self._keys.popitem(last=False)
                self.evicted_keys += 1
                self.evicted_events += len(dropped)
                self.events -= len(dropped)
            return found

    def others(self, key: StoreKey, run_id: str) -> list[Event]:
        """Every event under ``key`` not ``run_id``'s, oldest first (for tests and tools)."""
        with self._lock:
            e = self._keys.get(key)
            return [] if e is None else [Event(t, a) for t, a, r in zip(e.times, e.amounts, e.runs) if r != run_id]

    def _trim(self, entry: _Entry, window_ns: int | None) -> None:
        times = entry.times
        if window_ns is not None and times:
            cut = bisect_right(times, times[-1] - window_ns)  # t <= newest - window
            if cut:
                entry.drop_front(cut)
                self.expired_events += cut
                self.events -= cut
        over = len(entry) - self.max_events_per_key
        if over > 0:
            entry.drop_front(over)
            self.evicted_events += over
            self.events -= over
        if len(entry.run_ids) > 2 * self.max_events_per_key:  # ids of runs trimmed away
            entry.run_ids = set(entry.runs)
