"""What keeping decided runs for amendment (``amend``) costs, measured in one run.

    .venv/bin/python bench/amend.py [--runs N] [--rounds R]

CPU: the assembler and evaluator (default checks) deciding N 16-span runs, with the store of
decided runs and without, interleaved in R rounds; the process CPU time per span, medians,
and their ratio. Memory: tracemalloc of what N runs leave behind, with the store holding all
of them (no bound reached) and without, per kept span, beside the store's own estimate (what
``amend.max_bytes`` counts). No late spans: this is the price every span pays; a late span
costs a re-evaluation of its run, bounded by ``amend.max_run_spans``.

The last line is ``RESULT amend_cpu_us_per_span=<x.xx> amend_cpu_ratio=<x.xxx>
amend_bytes_per_span=<int> amend_estimate_bytes_per_span=<int>``.
"""
from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc

from faultgate_stream.assemble.assembler import Assembler
from faultgate_stream.assemble.config import AssembleConfig
from faultgate_stream.checks.registry import select
from faultgate_stream.model.clock import ManualClock
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.testing import simple_run
from faultgate_stream.verdict.amend import DecidedRuns
from faultgate_stream.verdict.config import AmendConfig
from faultgate_stream.verdict.evaluate import Evaluator

SPANS_PER_RUN = 16


class _Discard:
    def early(self, finding) -> None:
        pass

    def verdict(self, verdict) -> None:
        pass


def _runs(n: int) -> list:
    return [simple_run([("search", {"q": f"x{i}-{j}"}, f"result {j} " + "y" * 100) for j in range(SPANS_PER_RUN - 1)])
            for i in range(n)]


def _pipeline(store_on: bool, unbounded: bool = False) -> tuple[Assembler, ManualClock, DecidedRuns | None]:
    clock, telemetry = ManualClock(10**18), Telemetry()
    cfg = AmendConfig(max_runs=10**7, max_bytes=2**40, max_age=1e9) if unbounded else AmendConfig()
    store = DecidedRuns(cfg, clock, telemetry) if store_on else None
    asm = Assembler(Evaluator(select(), _Discard(), telemetry=telemetry, decided=store), clock,
                    AssembleConfig(root_grace=0.5, max_traces=10**7, decision_cache=1))
    return asm, clock, store


def cpu_us_per_span(runs: list, store_on: bool) -> float:
    asm, clock, _ = _pipeline(store_on)
    t0 = time.process_time()
    for r in runs:
        asm.add(r)
    clock.advance(1)
    asm.advance()
    return (time.process_time() - t0) / (len(runs) * SPANS_PER_RUN) * 1e6


def retained_bytes(runs_n: int, store_on: bool) -> tuple[float, float]:
    asm, clock, store = _pipeline(store_on, unbounded=True)
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for r in _runs(runs_n):  # built under tracemalloc: kept spans count, discarded ones do not
        asm.add(r)
        clock.advance(1)
        asm.advance()
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    spans = runs_n * SPANS_PER_RUN
    return used / spans, (store.bytes / spans if store is not None else 0.0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3000)
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args()
    runs = _runs(args.runs)
    off, on = [], []
    for _ in range(args.rounds):
        off.append(cpu_us_per_span(runs, False))
        on.append(cpu_us_per_span(runs, True))
    ratios = [b / a for a, b in zip(off, on)]
    m_off, m_on = statistics.median(off), statistics.median(on)
    print(f"CPU us/span, median of {args.rounds}: store off {m_off:.2f}, on {m_on:.2f}; "
          f"on/off per round {statistics.median(ratios):.3f} [{min(ratios):.3f}-{max(ratios):.3f}]")
    base, _ = retained_bytes(min(args.runs, 2000), False)
    kept, estimate = retained_bytes(min(args.runs, 2000), True)
    print(f"memory per kept span: {kept - base:.0f} B (tracemalloc); the store's estimate {estimate:.0f} B")
    print(f"RESULT amend_cpu_us_per_span={m_on - m_off:.2f} amend_cpu_ratio={statistics.median(ratios):.3f} "
          f"amend_bytes_per_span={kept - base:.0f} amend_estimate_bytes_per_span={estimate:.0f}")


if __name__ == "__main__":
    main()
