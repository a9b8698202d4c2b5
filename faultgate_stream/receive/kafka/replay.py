"""Counts verdicts of re-read runs: the ones a downstream may already hold from an earlier
owner (see ``lease``). A ``VerdictConsumer``, called from the evaluation thread, while the
source's thread adds and forgets traces: hence the lock."""
from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from faultgate_stream.model.verdict import EarlyFinding, RunVerdict


class ReplayLedger:
    def __init__(self, counter: Any) -> None:
        self._counter = counter
        # trace id -> re-read messages pending with spans of it; bounded by the source's
        # pending-message bound, since entries leave when their messages finish
        self._traces: dict[str, int] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._traces)

    def add(self, trace_ids: Iterable[str]) -> None:
        with self._lock:
            for t in trace_ids:
                self._traces[t] = self._traces.get(t, 0) + 1

    def forget(self, trace_ids: Iterable[str]) -> None:
        with self._lock:
            for t in trace_ids:
                n = self._traces.get(t, 0) - 1
                if n > 0:
                    self._traces[t] = n
                else:
                    self._traces.pop(t, None)

    def early(self, finding: EarlyFinding) -> None:
        """Early findings are counted with their run's verdict."""

    def verdict(self, verdict: RunVerdict) -> None:
        if verdict.revision:  # an amendment is not a replay: the run's first verdict was counted
            return
        with self._lock:
            replayed = verdict.key.trace_id in self._traces
        if replayed:
            self._counter.inc()
