"""The live service's hot path in one thread, CPU time only: where a span's microseconds go.

    .venv/bin/python bench/hot_path.py [--requests 60] [--rounds 5] [--no-export] [--gzip] [--profile | --stages | --decode]
    .venv/bin/python bench/hot_path.py --instructions [--no-export]   # load-proof: instructions per span

The stages are the service's own, built by ``Service`` from a config as ``serve`` builds
them: the gRPC handler (``TraceExport``, called with the request's bytes), the forwarder,
the live assembler on a manual clock, evaluation with the default checks, every verdict
sink, and the export queue, drained here by the exporter's own ``_send``. Only the network
is left out: the sender is a stub that answers success, after compressing the payload as
the gRPC channel's gzip does (zlib's default level) when the export is configured to, as
``bench/live.py`` is not (``DOWNSTREAM_COMPRESSION``, the peers' setting; ``--gzip`` to
add zlib's cost). Nothing listens; no thread runs.

The workload is ``bench/live.py``'s: requests of 32 runs of 16 spans with fresh trace ids,
on a manual clock paced as the live maximum (``drive``), so that ~25,000 spans are in
flight as there, with the collector set as ``serve`` sets it (``cli/heap.settle``).

``bench/live.py`` measures the same service end to end, over gRPC, with its threads and the
GIL's hand-offs; this isolates the Python work per span from them, so a change to the hot
path can be compared before and after within minutes on a shared machine (``process_time``,
medians of rounds). ``--profile`` prints cProfile's top functions for one round;
``--stages`` the CPU time of each stage without a profiler (``STAGES``: each stage's entry
point timed by a wrapper, about a microsecond per call, and there are a few calls per
run), and of each check's ``finish`` in the order they run: the first check of a run also
pays for the facts the run computes once and the others share (``Run.steps``, the step
errors). ``--decode`` times the receivers' decoding alone (``decode.protobuf``: the compiled
acceptance, the compiled reader building the records) over the same requests, with nothing else in
the process: run it with ``PYTHONPATH`` at another tree to compare two readers.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import os
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from live import (DOWNSTREAM_COMPRESSION, EXTRA_CHECKS, SPANS_PER_RUN, Requests, build_template,  # noqa: E402
                  callgrind_instructions, extra_config)

from faultgate_stream import config as service_config  # noqa: E402
from faultgate_stream.cli import heap  # noqa: E402
from faultgate_stream.export.spans.sender import Answer  # noqa: E402
from faultgate_stream.model.clock import ManualClock  # noqa: E402
from faultgate_stream.receive.grpc_server import TraceExport  # noqa: E402
from faultgate_stream.service import Service  # noqa: E402

RUNS_PER_REQUEST = 32

# (module, class or None, function, label): the stages --stages times, upstream first.
# Nested ones (indented labels) are part of the stage above them.
STAGES = [
    ("faultgate_stream.receive.decode", None, "protobuf", "decode: accept + compiled reader (records)"),
    ("faultgate_stream.assemble.assembler", "Assembler", "add", "assemble: add"),
    ("faultgate_stream.verdict.evaluate", "Evaluator", "spans_arrived", "  early checks (observe)"),
    ("faultgate_stream.export.spans.forward", "Forwarder", "_forward", "forward: the request, roots held"),
    ("faultgate_stream.assemble.assembler", "Assembler", "_take", "complete: partition into runs"),
    ("faultgate_stream.verdict.evaluate", "Evaluator", "_verdict", "evaluate: checks + verdict"),
    ("faultgate_stream.verdict.evaluate", "Evaluator", "_results", "  every check's finish"),
    ("faultgate_stream.export.metrics.sink", "MetricsSink", "verdict", "sink: metrics"),
    ("faultgate_stream.export.spans.sink", "SpanSink", "verdict", "sink: root annotated, queued"),
    ("faultgate_stream.export.spans.exporter", "SpanExporter", "_send", "export: batch joined (+ gzip with --gzip)"),
]


class CompressingSender:
    """The downstream without a network: what the gRPC channel's gzip costs when the export
    compresses, then success."""

    def __init__(self, gzip: bool) -> None:
        self.bytes = 0
        self.gzip = gzip

    def send(self, kind: str, payload: bytes) -> Answer:
        self.bytes += len(zlib.compress(payload, 6)) if self.gzip else len(payload)
        return Answer(0, "")


def build(export: bool, gzip: bool = False, checks: str | None = None) -> tuple[Service, ManualClock, CompressingSender]:
    """The service as ``serve`` builds it; ``checks``: one of ``live.py``'s extra configurations
    (``plugin``, ``rules`` ...) beside the default rules, its files in a scratch directory."""
    env = {"FAULTGATE_STREAM__LOG__VERDICTS": "false", "FAULTGATE_STREAM__ASSEMBLE__ROOT_GRACE": "0.5s",
           "FAULTGATE_STREAM__RECEIVE__GRPC_ENDPOINT": "127.0.0.1:0",
           "FAULTGATE_STREAM__RECEIVE__HTTP_ENDPOINT": "127.0.0.1:0",
           "FAULTGATE_STREAM__METRICS__ENDPOINT": "127.0.0.1:0"}
    if export:
        env["FAULTGATE_STREAM__EXPORT__ENDPOINT"] = "127.0.0.1:9"
        env["FAULTGATE_STREAM__EXPORT__COMPRESSION"] = "gzip" if gzip else DOWNSTREAM_COMPRESSION
    clock = ManualClock(1_700_000_000 * 10**9)
    path = None
    if checks:
        workdir = Path(tempfile.mkdtemp(prefix="hot_path-"))
        sys.path.insert(0, str(workdir))  # a plug-in's module, as the service imports it from its cwd
        path = workdir / "service.yaml"
        path.write_text("\n".join(extra_config(workdir, checks)) + "\n")
        os.chdir(workdir)  # the rules file is named relative to it, as live.py runs the service
    service = Service(service_config.load(path, env), clock=clock)
    sender = CompressingSender(service.config.export.compression == "gzip")
    if export:
        service.exporter._senders["traces"] = sender
    return service, clock, sender


# The manual clock's pace: requests arrive at this many spans a second of it, so every run
# waits out root_grace in flight behind ~25,000 others, as at the live maximum; until
# 2026-12-02 every request was decided before the next, with 512 spans in flight, and the
# collector's cost of walking the spans held (7.5 µs a span live, 17%) never showed here.
PACE_SPANS_PER_S = 50_000


def drive(service: Service, clock: ManualClock, bodies: list[bytes], step_s: float | None = None) -> None:
    """The bodies, the manual clock moved on by ``step_s`` after each (by default as if
    they came at ``PACE_SPANS_PER_S``): runs are closed at their deadlines by the scans
    ingestion runs when one is due (the ticker's own rule), the export queue drained after
    each request; then the clock passes root_grace and every run left is decided and
    exported, so each call decides all of its runs. A step past root_grace decides every
    request's runs before the next request's spans are added."""
    handler = TraceExport(service.ingest, service.telemetry, service.reader)
    live = service.assembler
    step = RUNS_PER_REQUEST * SPANS_PER_RUN / PACE_SPANS_PER_S if step_s is None else step_s
    for body in bodies:
        handler(body, None)
        clock.advance(step)
        _drain(service)
    clock.advance(service.config.assemble.root_grace + 0.1)
    live._scan()
    stage = service.evaluator.isolation  # plug-ins (``--checks plugin``): their thread hands the last verdicts on
    if stage is not None:
        stage.drain(60)
    _drain(service)


def _drain(service: Service) -> None:
    exporter = getattr(service, "exporter", None)
    if exporter is None:
        return
    cfg = service.config.export
    while True:
        items = service.queue.take(cfg.max_batch_spans, cfg.max_batch_bytes, timeout=0)
        if not items:
            break
        exporter._send(items)


def _timed(owner, name: str, label: str, spent: dict[str, float]) -> None:
    original = getattr(owner, name)

    def timed(*args, **kwargs):
        t0 = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            spent[label] = spent.get(label, 0.0) + time.process_time() - t0

    setattr(owner, name, timed)


def stages(service: Service, clock: ManualClock, bodies: list[bytes], spans: int) -> None:
    import importlib

    spent: dict[str, float] = {}
    for module, cls, fn, label in STAGES:
        mod = importlib.import_module(module)
        _timed(getattr(mod, cls) if cls else mod, fn, label, spent)
    checks: dict[str, float] = {}
    for check in service.evaluator.checks:
        _timed(check, "finish", check.name, checks)
    t0 = time.process_time()
    drive(service, clock, bodies)
    total = time.process_time() - t0
    print(f"CPU us/span by stage ({spans:,} spans; wrappers included in the total):")
    print(f"  {'total':52s} {total / spans * 1e6:7.2f}")
    for _, _, _, label in STAGES:
        print(f"  {label:52s} {spent.get(label, 0.0) / spans * 1e6:7.2f}")
    print("every check's finish, in the order they run (us/span, us/run):")
    for name, t in checks.items():
        print(f"  {name:52s} {t / spans * 1e6:7.2f} {t / (spans / SPANS_PER_RUN) * 1e6:8.1f}")


LONG, SHORT = 70, 10  # --instructions' two runs, in requests


def instructions(export: bool, checks: str | None = None) -> int:
    """Instructions per span, by callgrind: the run with 70 measured requests minus the run with
    10 (at the clock's pace, the first 50 are in flight together: the collector's walks of the
    spans held are counted too)."""
    def count(requests: int) -> int:
        return callgrind_instructions([__file__, "--rounds", "1", "--requests", str(requests)]
                                      + ([] if export else ["--no-export"]) + (["--checks", checks] if checks else []))
    spans = (LONG - SHORT) * RUNS_PER_REQUEST * SPANS_PER_RUN
    per_span = (count(LONG) - count(SHORT)) // spans
    print(f"export {'on' if export else 'off'}{f', checks {checks}' if checks else ''}: {per_span:,} instructions "
          f"per span (callgrind, {LONG} minus {SHORT} "
          f"requests, {spans:,} spans)")
    print(f"RESULT hot_path_instructions_per_span={per_span}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=60)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--no-export", action="store_true")
    p.add_argument("--gzip", action="store_true", help="export gzip-compressed (bench/live.py does not)")
    p.add_argument("--profile", action="store_true")
    p.add_argument("--stages", action="store_true")
    p.add_argument("--decode", action="store_true")
    p.add_argument("--instructions", action="store_true",
                   help="instructions per span by callgrind (load-proof; ~2 min)")
    p.add_argument("--checks", choices=sorted(EXTRA_CHECKS),
                   help="beside the default rules, live.py's configuration of that name (plugin, rules ...)")
    args = p.parse_args()
    if args.instructions:
        return instructions(not args.no_export, args.checks)
    template, offsets, spans_per_request = build_template(RUNS_PER_REQUEST, random.Random(20261201))
    source = Requests(template, offsets, 0)
    if args.decode:
        from faultgate_stream.checks.registry import select
        from faultgate_stream.read.projection import Projection
        from faultgate_stream.receive.decode import Reader
        from faultgate_stream.verdict.ruleset import Ruleset

        # as the service's receivers read: the default checks' attributes only
        reader = Reader(Projection(Ruleset(tuple(select())).attributes))
        bodies = [source.next() for _ in range(args.requests)]
        spans = args.requests * spans_per_request
        for body in bodies[:3]:
            reader.protobuf(body)  # warm
        figures = []
        for _ in range(args.rounds):
            t0 = time.process_time()
            for body in bodies:
                reader.protobuf(body)
            figures.append((time.process_time() - t0) / spans * 1e6)
        print(f"decode: CPU us/span median {statistics.median(figures):.2f} "
              f"[{min(figures):.2f}-{max(figures):.2f}] over {args.rounds} rounds of {spans:,} spans")
        return 0
    export = not args.no_export
    service, clock, sender = build(export, args.gzip, args.checks)
    heap.settle()  # the collector as `serve` leaves it: start-up frozen, the backstop thresholds
    drive(service, clock, [source.next() for _ in range(10)])  # warm: imports, caches, first verdicts
    spans = args.requests * spans_per_request
    if args.stages:
        stages(service, clock, [source.next() for _ in range(args.requests)], spans)
        return 0
    if args.profile:
        bodies = [source.next() for _ in range(args.requests)]
        prof = cProfile.Profile()
        prof.enable()
        drive(service, clock, bodies)
        prof.disable()
        stats = pstats.Stats(prof)
        total = stats.total_tt
        print(f"cProfile, {spans:,} spans, export {'on' if export else 'off'}: {total / spans * 1e6:.1f} us/span "
              f"under the profiler")
        for key in ("tottime", "cumulative"):
            print(f"\ntop 25 by {key}:")
            rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2 if key == "tottime" else 3], reverse=True)
            for (file, line, fn), (_, calls, tt, ct, _) in rows[:25]:
                where = f"{Path(file).parent.name}/{Path(file).name}:{line}" if line else file
                print(f"  {tt / total:6.1%} self {ct / total:6.1%} cum {calls:>8}  {where}({fn})")
        return 0
    figures = []
    for _ in range(args.rounds):
        bodies = [source.next() for _ in range(args.requests)]
        t0 = time.process_time()
        drive(service, clock, bodies)
        figures.append((time.process_time() - t0) / spans * 1e6)
    runs = service.telemetry["faultgate_runs"]
    decided = sum(s.value for m in runs.collect() for s in m.samples if s.name.endswith("_total"))
    expected = (10 + args.rounds * args.requests) * RUNS_PER_REQUEST
    if decided != expected:
        print(f"PROBLEM: {decided:.0f} runs decided, expected {expected}")
        return 1
    print(f"export {'on' if export else 'off'}: CPU us/span median {statistics.median(figures):.2f} "
          f"[{min(figures):.2f}-{max(figures):.2f}] over {args.rounds} rounds of {spans:,} spans; "
          f"{decided:.0f} runs decided" + (f", {sender.bytes:,} gzip bytes sent" if export else ""))
    print(f"RESULT hot_path_us_per_span={statistics.median(figures):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
