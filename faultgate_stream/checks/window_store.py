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
and a run reads back only the slice of time its own calls' windows cover, so the cost of
a hot key's long history is a bisection, not a copy.

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
from bisect import bisect_right, insort
from collections import OrderedDict
from collections.abc import Sequence
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


class _Entry:
    __slots__ = ("events", "runs")

    def __init__(self) -> None:
        # (span start ns, amount, run id), sorted: a window is a slice found by bisection,
        # and the oldest events are the front, so every bound is one slice deletion
        self.events: list[tuple[int, float, str]] = []
        self.runs: set[str] = set()  # runs that may have events here (a superset: trims leave ids)


_AFTER = float("inf")  # sorts after any amount: (t, _AFTER) follows every event at time t


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
                 after_ns: int | None = None, until_ns: int | None = None) -> list[Event]:
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
            evs = entry.events
            if run_id in entry.runs:  # judged again (an amended verdict): its old events go
                kept = [e for e in evs if e[2] != run_id]
                self.events -= len(evs) - len(kept)
                evs = entry.events = kept
            lo = 0 if after_ns is None else bisect_right(evs, (after_ns, _AFTER))
            hi = len(evs) if until_ns is None else bisect_right(evs, (until_ns, _AFTER))
            others = [Event(t, a) for t, a, _ in evs[lo:hi]]
            if own:
                entry.runs.add(run_id)
                for t, a in own:
                    insort(evs, (t, a, run_id))
                self.events += len(own)
            self._trim(entry, window_ns)
            if not entry.events:
                del self._keys[key]
            while len(self._keys) > self.max_keys:
                _, dropped = self._keys.popitem(last=False)
                self.evicted_keys += 1
                self.evicted_events += len(dropped.events)
                self.events -= len(dropped.events)
            return others

    def _trim(self, entry: _Entry, window_ns: int | None) -> None:
        evs = entry.events
        if window_ns is not None and evs:
            cut = bisect_right(evs, (evs[-1][0] - window_ns, _AFTER))  # t <= newest - window
            if cut:
                del evs[:cut]
                self.expired_events += cut
                self.events -= cut
        over = len(evs) - self.max_events_per_key
        if over > 0:
            del evs[:over]
            self.evicted_events += over
            self.events -= over
        if len(entry.runs) > 2 * self.max_events_per_key:  # ids of runs trimmed away
            entry.runs = {e[2] for e in evs}
