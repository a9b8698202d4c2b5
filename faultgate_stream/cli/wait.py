"""Waiting on the main thread for a signal's handler to set an event."""
from __future__ import annotations

import threading

# Python runs a signal's handler on the main thread, when that thread next runs bytecode. The
# kernel hands a process-directed signal to any thread that does not block it, often one of
# gRPC's, and then a main thread asleep in ``Event.wait()`` with no timeout never wakes to run
# the handler: a SIGTERM was once left unanswered for minutes (a full test run hung on it).
# Waking every so often lets the handler run; a stop waits this long at most.
POLL_S = 0.25


def until_set(event: threading.Event) -> None:
    while not event.wait(POLL_S):
        pass
