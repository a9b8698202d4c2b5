"""Cross-run counts for windowed budgets: a bounded store of timed events, by key.

Checks are built once and shared by every run, and keep nothing between runs. A budget
that counts over a session or an agent (``per: session``, a refund total per customer per
day) needs what earlier runs did, so that state lives here, in one object the service
(or the offline command) builds and hands to the checks that need it.

A key is (namespace, budget, scope value, argument value): the namespace keeps apart the
same budget in two bindings (and a shadow policy from the enforced one); the budget is its
definition, so a reload that keeps a budget keeps its counts. Each key holds events
``(span start ns, amount)`` grouped by the run that made them: a run recorded again (its
verdict amended) replaces its own events instead of adding to them.

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
    __slots__ = ("runs", "events")

    def __init__(self) -> None:
        self.runs: dict[str, list[Event]] = {}  # run id -> its events, in recording order
        self.events = 0


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

    def exchange(self, key: StoreKey, run_id: str, own: Sequence[Event], window_ns: int | None) -> list[Event]:
        """The events other runs recorded under ``key``, then ``own`` recorded as
        ``run_id``'s (replacing what that run recorded before), in one step."""
        with self._lock:
            entry = self._keys.get(key)
            if entry is None:
                entry = self._keys[key] = _Entry()
            else:
                self._keys.move_to_end(key)
            others = [e for rid, evs in entry.runs.items() if rid != run_id for e in evs]
            previous = entry.runs.pop(run_id, None)
            if previous is not None:
                entry.events -= len(previous)
                self.events -= len(previous)
            if own:
                entry.runs[run_id] = list(own)
                entry.events += len(own)
                self.events += len(own)
            self._trim(entry, window_ns)
            if not entry.runs:
                del self._keys[key]
            while len(self._keys) > self.max_keys:
                _, dropped = self._keys.popitem(last=False)
                self.evicted_keys += 1
                self.evicted_events += dropped.events
                self.events -= dropped.events
            return others

    def _trim(self, entry: _Entry, window_ns: int | None) -> None:
        if window_ns is not None and entry.events:
            newest = max(e.t_ns for evs in entry.runs.values() for e in evs)
            self._drop(entry, lambda e: e.t_ns <= newest - window_ns, expired=True)
        over = entry.events - self.max_events_per_key
        if over > 0:
            cut = sorted(e.t_ns for evs in entry.runs.values() for e in evs)[over - 1]
            # the oldest ``over`` events; a tie at the cut goes too, so the bound holds
            self._drop(entry, lambda e: e.t_ns <= cut, expired=False)

    def _drop(self, entry: _Entry, old, *, expired: bool) -> None:
        for rid in list(entry.runs):
            evs = entry.runs[rid]
            kept = [e for e in evs if not old(e)]
            gone = len(evs) - len(kept)
            if not gone:
                continue
            entry.events -= gone
            self.events -= gone
            if expired:
                self.expired_events += gone
            else:
                self.evicted_events += gone
            if kept:
                entry.runs[rid] = kept
            else:
                del entry.runs[rid]
