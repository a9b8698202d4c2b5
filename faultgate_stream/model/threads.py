"""Background threads that cannot die unnoticed.

Each loop catches and counts its own errors per iteration; this is the net under that:
a thread that stops on an error anyway (a ``BaseException``, or a bug in the loop itself)
is counted in ``faultgate_thread_deaths_total`` and makes ``healthy`` false, which takes
``/readyz`` down, so an orchestrator restarts the process instead of it limping on with
no completion scan (issue 9, defect 1).
"""
from __future__ import annotations

import threading
from collections.abc import Callable

import structlog

from faultgate_stream.model.telemetry import Telemetry

log = structlog.get_logger("faultgate_stream.threads")


class Threads:
    def __init__(self, telemetry: Telemetry) -> None:
        self._deaths = telemetry["faultgate_thread_deaths"]
        self._dead: set[str] = set()
        self._lock = threading.Lock()

    def start(self, name: str, target: Callable[[], None]) -> threading.Thread:
        def run() -> None:
            try:
                target()
            except BaseException:
                with self._lock:
                    self._dead.add(name)
                self._deaths.labels(name).inc()
                # logged and counted here, not re-raised: threading's excepthook would only
                # print the same traceback a second time, unstructured
                log.exception("thread_died", thread=name)

        th = threading.Thread(target=run, name=name, daemon=True)
        th.start()
        return th

    @property
    def healthy(self) -> bool:
        with self._lock:
            return not self._dead

    @property
    def dead(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._dead)
