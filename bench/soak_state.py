"""Long-lived state as it fills, in process: does a span cost more, or a collection pause
longer, once the decision cache and the amendment store are full?

    .venv/bin/python bench/soak_state.py [--requests 1400] [--window 100] [--export | --no-export]

The service's own stages, as ``bench/hot_path.py`` drives them (one thread, a manual clock
stepped 0.6 s per request, every run decided before the next request), on
``bench/live.py``'s workload: requests of 32 runs of 16 spans with fresh trace ids. With the
default bounds the amendment store is full (``amend.max_age``, 60 s: ~3,200 runs) after
~100 requests and the decision cache (``assemble.decision_cache_bytes``, 16 MiB: ~34,100
traces) after ~1,070; the default run keeps going past both.

The collector runs as CPython sets it by default (thresholds 700, 10, 10), wherever
allocation crosses a threshold, as it would in any process that does not move it between
scans (the service does: ``cli/heap.py``); ``gc.callbacks`` times every collection. Per
window of ``--window`` requests:

- ``CPU us/span``: process time per span, the window's automatic collections included;
- ``gc us/span``: of which the collector (all generations, CPU), and the full collections:
  how many and their mean pause (CPU);
- ``full gc ms``: the CPU of one full collection at the end of the window (what the next
  one costs now); ``tracked``, the objects the collector tracks then, and ``refs``, the
  references a full collection follows among them (``gc.get_referents``: what its cost is
  proportional to, and a count no other process on the machine can move);
- the decision cache's traces, the store's runs, and RSS.

Run a tree's own copy with ``PYTHONPATH`` at it to compare trees (the script uses only the
service's public surface), both at once so that they share the machine's load. The last
line is ``RESULT soak_cpu_ratio=<last/first window CPU per span> soak_full_gc_ratio=<last/
first full collection> soak_gc_refs_ratio=<last/first references followed>``.
"""
from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from hot_path import RUNS_PER_REQUEST, build, drive  # noqa: E402
from live import Requests, build_template  # noqa: E402

# The manual clock's step per request: past root_grace, so every run is decided before the
# next request (the figures in bench/README.md were taken so; hot_path's own pace keeps
# ~25,000 spans in flight instead, and fills the amendment store by count, not age).
STEP_S = 0.6


class Pauses:
    """Every collection's CPU time, by generation (``gc.callbacks``; the thread's CPU, not
    the wall clock, which other processes on a shared machine stretch)."""

    def __init__(self) -> None:
        self.started = 0.0
        self.by_gen = [[0, 0.0], [0, 0.0], [0, 0.0]]  # [count, seconds]

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self.started = time.thread_time()
        else:
            g = self.by_gen[info["generation"]]
            g[0] += 1
            g[1] += time.thread_time() - self.started

    def take(self) -> list[list]:
        out, self.by_gen = self.by_gen, [[0, 0.0], [0, 0.0], [0, 0.0]]
        return out


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=1400)
    p.add_argument("--window", type=int, default=100)
    p.add_argument("--no-export", action="store_true")
    args = p.parse_args()
    template, offsets, per_request = build_template(RUNS_PER_REQUEST, random.Random(20261201))
    source = Requests(template, offsets, 0)
    service, clock, _ = build(not args.no_export)
    drive(service, clock, [source.next() for _ in range(5)], STEP_S)  # warm: imports, caches
    asm, store = service.assembler._asm, service.evaluator.decided  # noqa: SLF001 (gauges' sources)
    pauses = Pauses()
    gc.collect()
    gc.callbacks.append(pauses)
    print(f"{'requests':>8} {'CPU us/span':>11} {'gc us/span':>10} {'full gcs':>8} {'mean full':>9} "
          f"{'full gc ms':>10} {'tracked':>9} {'refs':>9} {'decided':>8} {'kept runs':>9} {'RSS MB':>7}")
    rows = []
    done = 0
    while done < args.requests:
        bodies = [source.next() for _ in range(args.window)]
        t0 = time.process_time()
        drive(service, clock, bodies, STEP_S)
        cpu = time.process_time() - t0
        window = pauses.take()
        spans = args.window * per_request
        gc_s = sum(s for _, s in window)
        full_n, full_s = window[2]
        t1 = time.thread_time()
        gc.collect()
        full_now = time.thread_time() - t1
        pauses.take()  # the timed one is not the next window's
        done += args.window
        tracked = gc.get_objects()
        refs = sum(len(gc.get_referents(o)) for o in tracked)
        rows.append((cpu / spans * 1e6, full_now * 1e3, refs))
        print(f"{done:>8} {cpu / spans * 1e6:>11.2f} {gc_s / spans * 1e6:>10.2f} {full_n:>8} "
              f"{(full_s / full_n * 1e3 if full_n else 0):>7.1f}ms {full_now * 1e3:>10.1f} {len(tracked):>9,} "
              f"{refs:>9,} {asm.decided_traces:>8,} {len(store) if store is not None else 0:>9,} {rss_mb():>7.1f}",
              flush=True)
        del tracked
    gc.callbacks.remove(pauses)
    print(f"RESULT soak_cpu_ratio={rows[-1][0] / rows[0][0]:.3f} soak_full_gc_ratio={rows[-1][1] / rows[0][1]:.3f} "
          f"soak_gc_refs_ratio={rows[-1][2] / rows[0][2]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
