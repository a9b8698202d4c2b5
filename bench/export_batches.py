"""Span export under a steady load, in process with its worker threads: how many calls go
downstream, how many spans each carries, and how often the workers were woken.

    .venv/bin/python bench/export_batches.py [--rate 5700] [--seconds 10]

The service is ``hot_path.py``'s (export on, the live bench's workload of 512-span requests
of 16-span runs), with the exporter's own worker threads running (``export.workers``,
``export.linger`` as configured) and a downstream stub that answers success at once.
This thread plays the receivers and the completion ticker: a request every
512 / ``--rate`` seconds, the manual clock moved on by as much, a completion scan after
each. Printed: calls, spans per call (median, min, max), the share of calls that carried a
full batch (``export.max_batch_spans``), the workers' wake-ups from the queue's condition
per call, and the process's CPU time per span (all threads).
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from hot_path import RUNS_PER_REQUEST, build  # noqa: E402
from live import Requests, build_template  # noqa: E402

from faultgate_stream.export.spans.sender import Answer  # noqa: E402
from faultgate_stream.receive.grpc_server import TraceExport  # noqa: E402


class CountingSender:
    def __init__(self) -> None:
        self.calls = 0

    def send(self, kind: str, payload: bytes) -> Answer:
        self.calls += 1
        return Answer(0, "")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=float, default=5700.0, help="spans per second offered (default 5700)")
    p.add_argument("--seconds", type=float, default=10.0)
    args = p.parse_args()
    service, clock, _ = build(export=True)
    sender = CountingSender()
    service.exporter._senders["traces"] = sender
    queue, exporter = service.queue, service.exporter
    per_call: list[int] = []
    send = exporter._send

    def counted_send(items):
        per_call.append(sum(i.spans for i in items))
        return send(items)

    exporter._send = counted_send
    wakeups = [0]
    wait = queue._cv.wait

    def counted_wait(timeout=None):
        try:
            return wait(timeout)
        finally:
            wakeups[0] += 1

    queue._cv.wait = counted_wait
    template, offsets, spans_per_request = build_template(RUNS_PER_REQUEST, random.Random(20261201))
    source = Requests(template, offsets, 0)
    handler = TraceExport(service.ingest, service.telemetry, service.reader)
    bodies = [source.next() for _ in range(int(args.rate * args.seconds / spans_per_request) + 1)]
    interval = spans_per_request / args.rate
    exporter.start()
    cpu0, start = time.process_time(), time.monotonic()
    for n, body in enumerate(bodies):
        delay = start + n * interval - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        handler(body, None)
        clock.advance(interval)
        service.assembler._scan()
    clock.advance(1.0)
    service.assembler._scan()
    behind = time.monotonic() - (start + len(bodies) * interval)
    drained = queue.wait_empty(30.0)
    cpu = time.process_time() - cpu0
    exporter.shutdown(1.0)
    spans = len(bodies) * spans_per_request
    cfg = service.config.export
    full = sum(1 for c in per_call if c >= cfg.max_batch_spans)
    print(f"{len(bodies)} requests, {spans:,} spans at {args.rate:,.0f} spans/s offered "
          f"(the feeder ended {max(0.0, behind):.2f}s behind schedule); workers {cfg.workers}, "
          f"linger {cfg.linger}s, max_batch_spans {cfg.max_batch_spans}; drained: {drained}")
    print(f"calls {sender.calls}, spans per call median {statistics.median(per_call):,.0f} "
          f"[{min(per_call):,}-{max(per_call):,}], full batches {full} of {len(per_call)}; "
          f"worker wake-ups {wakeups[0]:,} ({wakeups[0] / max(1, len(per_call)):.1f} a call)")
    print(f"CPU us/span, all threads: {cpu / spans * 1e6:.2f}")
    print(f"RESULT export_calls={sender.calls} spans_per_call={statistics.median(per_call):.0f} "
          f"wakeups_per_call={wakeups[0] / max(1, len(per_call)):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
