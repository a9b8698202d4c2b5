"""Sessions offline (``check --sessions``): a file's run verdicts grouped and judged as the
live stage would, with the spans' own times as the clock.

Runs are filed in order of their first span's start. Before each, every session idle for
``idle_timeout`` by that start is decided; each run counts as activity at its last span's
end. At the end of input the sessions still open are decided (end ``complete``; live they
would end by idle time or shutdown). So a file holds the same sessions, with the same
runs and the same results, as a live stream of its spans sent at the times they record.
"""
from __future__ import annotations

from faultgate_stream.model.session import SessionEnd, SessionVerdict
from faultgate_stream.model.verdict import RunVerdict
from faultgate_stream.sessions.config import SessionsConfig
from faultgate_stream.sessions.tracker import Tracker


def decide_sessions(verdicts: list[RunVerdict], config: SessionsConfig) -> list[SessionVerdict]:
    out: list[SessionVerdict] = []
    tracker = Tracker(config, out.append)
    last = 0
    for v in sorted(verdicts, key=lambda v: (v.first_start_ns, str(v.key))):
        tracker.advance(v.first_start_ns)
        at = v.last_end_ns or v.first_start_ns
        tracker.add(v, at)
        last = max(last, at)
    tracker.close_all(SessionEnd.COMPLETE, last)
    return out
