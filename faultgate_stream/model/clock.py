"""Time as a parameter: the assembler never reads the wall clock itself.

Live, a ticker passes ``time.time_ns()``; offline, end of input closes every run; tests
move a ``ManualClock`` by hand. All three drive the same ``advance(now_ns)``.
"""
from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ns(self) -> int: ...


class WallClock:
    # the C function itself: a method around it was a Python frame on every reading (several
    # a decided run: its close, its amendment store entry, the store's trim)
    now_ns = staticmethod(time.time_ns)


class ManualClock:
    """A clock that moves only when told to."""

    def __init__(self, start_ns: int = 0) -> None:
        self._now = start_ns

    def now_ns(self) -> int:
        return self._now

    def advance(self, seconds: float) -> int:
        self._now += int(seconds * 1e9)
        return self._now
