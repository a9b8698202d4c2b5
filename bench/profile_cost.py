"""What a run's profile (issue 37: shape, session, task; ``verdict/profile.py``) costs in
process: CPU time of assembling and judging ``bench/live.py``'s workload with the default
rules, without a profile and with one, interleaved in rounds; and what the drift test and a
session's decision cost on their own.

    .venv/bin/python bench/profile_cost.py [--rounds 7] [--requests 40]

Only a service that configures drift (a band), sessions or judge routing by drift makes
profiles; the others pay nothing (the evaluator's ``profile`` is None). CPU time, medians
of rounds, differences taken within a round, as ``bench/checks_cost.py`` measures.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from checks_cost import requests, template_spans  # noqa: E402
from live import SPANS_PER_RUN  # noqa: E402

from faultgate_stream.assemble.assembler import Assembler  # noqa: E402
from faultgate_stream.checks.registry import select  # noqa: E402
from faultgate_stream.gate.drift import ShapeCounts, compare  # noqa: E402
from faultgate_stream.model.clock import ManualClock  # noqa: E402
from faultgate_stream.model.verdict import Completion  # noqa: E402
from faultgate_stream.pipeline import OFFLINE_LIMITS, VerdictList  # noqa: E402
from faultgate_stream.verdict.evaluate import Evaluator  # noqa: E402
from faultgate_stream.verdict.profile import Profiler  # noqa: E402


def cpu_us_per_run(profile, reqs: list[list]) -> float:
    sink = VerdictList()
    assembler = Assembler(Evaluator(select(None), sink, profile=profile), ManualClock(), OFFLINE_LIMITS)
    t0 = time.process_time()
    for r in reqs:
        assembler.add(r)
        assembler.close_all(Completion.COMPLETE)
    spent = time.process_time() - t0
    assert all((v.profile is not None) == (profile is not None) for v in sink.verdicts)
    return spent / (sum(len(r) for r in reqs) / SPANS_PER_RUN) * 1e6


def drift_us(n: int = 2000) -> float:
    """One drift judgement of a full window (200 runs) against a 600-run baseline."""
    rng = random.Random(7)
    classes = [f"class{i}" for i in range(12)]

    def counts(k: int) -> ShapeCounts:
        c = ShapeCounts()
        c.runs = k
        c.counts["tools"] = Counter(rng.choices(classes, k=k))
        for dim, vals in (("steps", ["1", "2-3", "4-7"]), ("errors", ["0", "1"]), ("retries", ["0", "1"]),
                          ("tokens", ["<1k", "1k-2k", "2k-4k"])):
            c.counts[dim] = Counter(rng.choices(vals, k=k))
        return c

    base, window = counts(600), counts(200)
    t0 = time.process_time()
    for _ in range(n):
        compare(base, window)
    return (time.process_time() - t0) / n * 1e6


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--requests", type=int, default=40, help="requests of 32 runs (512 spans) per configuration and round")
    args = p.parse_args()
    spans = template_spans()
    made = {"default": None, "profiled": Profiler(monotonic=("order.stage",))}
    results: dict[str, list[float]] = {k: [] for k in made}
    first = 0
    print(f"{'round':>5} " + " ".join(f"{k:>10}" for k in made) + "   (CPU us per run of 16 spans)")
    for rnd in range(1, args.rounds + 1):
        for name, profile in made.items():
            reqs = requests(spans, args.requests, first)
            first += args.requests
            results[name].append(cpu_us_per_run(profile, reqs))
        print(f"{rnd:>5} " + " ".join(f"{results[k][-1]:>10.1f}" for k in made), flush=True)
    added = statistics.median([a - b for a, b in zip(results["profiled"], results["default"])])
    base = statistics.median(results["default"])
    d = drift_us()
    print(f"a profile adds {added:.1f} us to a run's {base:.1f} us ({added / base:.1%}); "
          f"one drift judgement of a 200-run window: {d:.0f} us")
    print(f"RESULT profile_us_per_run={added:.1f} profile_ratio={added / base:.3f} drift_us={d:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
