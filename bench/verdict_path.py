"""The per-run Python behind the checks, stage by stage: building the verdict, the metrics
sink, the span sink (roots released, annotated, packed, queued).

    .venv/bin/python bench/verdict_path.py [--requests 10] [--rounds 7] [--only build|metrics|spans]

The service is ``hot_path.py``'s (built by ``Service`` as ``serve`` builds it, export on,
the live bench's workload of 16-span runs). Its runs are decided once, as the service
decides them, while this records what each stage was given: the run and its trace state
with the checks' results, the verdict, and the spans each verdict released. Then each stage
is replayed alone over the recorded runs, ``--rounds`` times, and its CPU time per run is
printed (median of rounds): ``build`` is ``Evaluator._verdict`` with the checks' results
handed back as recorded (the run's facts are worked out by then: they are the checks'
cost, not the verdict's), ``metrics`` is ``MetricsSink.verdict`` on series that already
exist (a service's steady state), and ``spans`` is ``SpanSink.verdict`` with the released
spans held again (``HeldSpans.hold``, as the forwarder holds them) before each call.

The time per run of one stage is small (tens of microseconds) and this machine is shared,
so the load-proof figure is an instruction count: run one stage under callgrind at two
round counts and divide the difference by the runs replayed, e.g.::

    for r in 2 6; do valgrind --tool=callgrind --callgrind-out-file=/tmp/vp-$r \\
        .venv/bin/python bench/verdict_path.py --only spans --rounds $r; done

(the ``summary:`` lines of the two files; ``--requests 10`` is 320 runs a round). The
collector is set as the service sets it (``cli/heap.py``'s ``settle``) before the replay.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from hot_path import RUNS_PER_REQUEST, build, drive  # noqa: E402
from live import Requests, build_template  # noqa: E402

from faultgate_stream.cli.heap import settle  # noqa: E402


def record(requests: int):
    service, clock, _ = build(export=True)
    source = Requests(*build_template(RUNS_PER_REQUEST, random.Random(20261201))[:2], 0)
    drive(service, clock, [source.next() for _ in range(10)])  # warm: imports, caches, series
    evaluator, state = service.evaluator, service.export
    runs, verdicts, released = [], [], []
    results_of: dict[int, tuple] = {}
    results, verdict, release = evaluator._results, evaluator._verdict, state.held.release

    def recording_results(st, run):
        out = results_of[id(run)] = results(st, run)
        return out

    def recording_verdict(st, run, judged=()):
        v = verdict(st, run, judged)
        runs.append((st, run))
        verdicts.append(v)
        return v

    def recording_release(trace_id, span_ids):
        out = release(trace_id, span_ids)
        released.append({(trace_id, sid): h for sid, h in out.items()})
        return out

    evaluator._results, evaluator._verdict, state.held.release = recording_results, recording_verdict, recording_release
    drive(service, clock, [source.next() for _ in range(requests)])
    evaluator._results, evaluator._verdict, state.held.release = results, verdict, release
    return service, runs, verdicts, released, results_of


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=10, help="requests of 32 runs recorded (default 10)")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--only", choices=("build", "metrics", "spans"))
    args = p.parse_args()
    service, runs, verdicts, released, results_of = record(args.requests)
    # the collector as the service sets it once built (cli/heap.py): what exists now frozen,
    # young collections rare and full ones never automatic; otherwise a full collection
    # over the recorded runs falls into whichever stage's replay happens to cross a threshold
    settle()
    evaluator = service.evaluator
    metrics = next(s for s in evaluator._next.sinks if type(s).__name__ == "MetricsSink")
    spans = service.span_sink
    hold = service.export.held.hold
    queue = service.export.queue
    assert len(verdicts) == len(released) == args.requests * RUNS_PER_REQUEST

    def build_stage() -> None:
        make = evaluator._verdict
        for st, run in runs:
            make(st, run)

    def metrics_stage() -> None:
        sink = metrics.verdict
        for v in verdicts:
            sink(v)

    def spans_stage() -> None:
        sink = spans.verdict
        for v, r in zip(verdicts, released):
            for (tid, sid), h in r.items():
                hold(tid, sid, h)
            sink(v)

    def drain() -> None:
        while items := queue.take(10**9, 10**12, timeout=0):
            queue.done(sum(i.spans for i in items), items)

    stages = {"build": build_stage, "metrics": metrics_stage, "spans": spans_stage}
    evaluator._results = lambda st, run: results_of[id(run)]
    figures: dict[str, list[float]] = {name: [] for name in stages}
    chosen = [args.only] if args.only else list(stages)
    for _ in range(args.rounds):
        for name in chosen:
            t0 = time.process_time()
            stages[name]()
            figures[name].append((time.process_time() - t0) / len(runs) * 1e6)
            drain()
    print(f"CPU us per run (median of {args.rounds} rounds of {len(runs)} runs of 16 spans; [min-max]):")
    for name in chosen:
        f = figures[name]
        print(f"  {name:8s} {statistics.median(f):8.2f}  [{min(f):.2f}-{max(f):.2f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
