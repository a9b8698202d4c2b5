"""The same error, logged once per interval instead of once per occurrence.

When file descriptors ran out, every failed accept logged a traceback: 53 MB of them in
30 s, which cost more than the failure. A repeat of a message already logged within
``interval`` seconds is dropped and counted; the next one let through says how many were
dropped, so nothing is hidden, only folded.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable

# Interval between two lines about the same thing: long enough to fold a storm, short
# enough that an operator tailing the log still sees it is going on.
DEFAULT_INTERVAL = 10.0
# Distinct messages remembered; past it the oldest is forgotten (and may log again).
MAX_KEYS = 1024


class Throttle:
    """``allow(key)`` -> how many repeats of ``key`` were dropped before this one, or
    None when this one is to be dropped too. Thread-safe."""

    def __init__(self, interval: float = DEFAULT_INTERVAL, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self._clock = clock
        self._last: dict[Hashable, tuple[float, int]] = {}   # key -> (last logged, dropped since)
        self._lock = threading.Lock()

    def allow(self, key: Hashable) -> int | None:
        now = self._clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last[0] < self.interval:
                self._last[key] = (last[0], last[1] + 1)
                return None
            if last is None and len(self._last) >= MAX_KEYS:
                self._last.pop(next(iter(self._last)))
            self._last.pop(key, None)
            self._last[key] = (now, 0)
            return last[1] if last is not None else 0


class RepeatFilter(logging.Filter):
    """A ``logging.Filter`` for the libraries that log per connection (asyncio's accept
    loop, aiohttp's request handler): one record per (logger, message, exception type)
    per interval; a record let through after drops carries ``(N similar suppressed)``."""

    def __init__(self, throttle: Throttle | None = None) -> None:
        super().__init__()
        self.throttle = throttle or Throttle()

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] else ""
        dropped = self.throttle.allow((record.name, str(record.msg), exc))
        if dropped is None:
            return False
        if dropped:
            record.msg = f"{record.msg} ({dropped} similar suppressed)"
        return True


# The loggers that write one line per connection or accept when something goes wrong.
NOISY_LOGGERS = ("asyncio", "aiohttp.server", "aiohttp.web", "aiohttp.access", "grpc._server")
_installed = threading.Lock()


def install(loggers: tuple[str, ...] = NOISY_LOGGERS) -> None:
    """Put one ``RepeatFilter`` on each logger, once per process."""
    with _installed:
        for name in loggers:
            logger = logging.getLogger(name)
            if not any(isinstance(f, RepeatFilter) for f in logger.filters):
                logger.addFilter(RepeatFilter())
