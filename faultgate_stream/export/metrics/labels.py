"""Bounded label values: the first ``cap`` values pass, later ones fold into ``other``."""
from __future__ import annotations

from prometheus_client import Counter

OTHER = "other"


class BoundedLabel:
    def __init__(self, label: str, cap: int, folded: Counter) -> None:
        self.label = label
        self.cap = cap
        self._seen: set[str] = set()
        self._folded = folded.labels(label)

    def __call__(self, value: str) -> str:
        value = value or "unknown"
        if value in self._seen:
            return value
        if len(self._seen) < self.cap:
            self._seen.add(value)
            return value
        self._folded.inc()
        return OTHER
