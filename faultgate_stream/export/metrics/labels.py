"""Bounded label values: each value is at most ``max_length`` characters (a longer one is
cut, and a hash of the whole keeps two long values apart), and the first ``cap`` values
pass while later ones fold into ``other``. Both are counted."""
from __future__ import annotations

import hashlib

from prometheus_client import Counter

from faultgate_stream.export.metrics.config import DEFAULT_MAX_LABEL_LENGTH

OTHER = "other"
_HASH_CHARS = 8


def shorten(value: str, max_length: int) -> str:
    """``value`` if it fits, else its head, ``~`` and 8 hex digits of its SHA-256."""
    if len(value) <= max_length:
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
    return f"{value[:max_length - _HASH_CHARS - 1]}~{digest}"


class BoundedLabel:
    def __init__(self, label: str, cap: int, folded: Counter, shortened: Counter | None = None,
                 max_length: int = DEFAULT_MAX_LABEL_LENGTH) -> None:
        self.label = label
        self.cap = cap
        self.max_length = max_length
        self._seen: set[str] = set()
        self._folded = folded.labels(label)
        self._shortened = shortened.labels(label) if shortened is not None else None

    def __call__(self, value: str) -> str:
        value = value or "unknown"
        if len(value) > self.max_length:
            value = shorten(value, self.max_length)
            if self._shortened is not None:
                self._shortened.inc()
        if value in self._seen:
            return value
        if len(self._seen) < self.cap:
            self._seen.add(value)
            return value
        self._folded.inc()
        return OTHER
