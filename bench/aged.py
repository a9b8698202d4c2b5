"""Does the service get slower with age? One service kept for every round against a fresh one
started for each round, in the same minutes: CPU microseconds a span of each.

    .venv/bin/python bench/aged.py [--rounds 6] [--seconds 5] [--warmup 2] [--export]

``bench/live.py`` prints "service round 1 -> N" (throughput of its first window against its
last, one process): on this shared 2-core machine that ratio moves with whatever else runs in
those minutes, and a service that holds more and more as it runs would show the same fall.
This tells them apart. Both services are ``live.py``'s (``service_config``: default checks,
``root_grace`` 0.5 s, with ``--export`` every span passed on to a null receiver), pinned to
CPU 0, the load generator and the downstream on CPU 1, ``live.py``'s workload and load
(``drive``: 8 calls in flight, fresh trace ids). Each round starts a fresh process, drives it
and the aged one back to back (which goes first alternates, so a trend in the machine's load
falls on both), waits until each decided every run (and exported every span), and stops the
fresh one. The aged one keeps everything it decided: by round 2 its decision cache, amendment
store and rings are full, and the printed state shows it (from its own metrics).

Judged by CPU time of the service's process a span (/proc), not spans/s: the service runs at
~99% of its core, so a fall in throughput at the same CPU a span is the machine. The last
line is ``RESULT aged_vs_fresh=<x.xxx>``: the median over rounds 2.. of aged CPU a span over
fresh CPU a span (round 1's aged process is fresh too). Exit 1 when a check of the work done
failed (refused spans, undecided runs, spans not exported), 2 when a server did not start.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import live  # noqa: E402  (the bench's processes, workload and load, shared)


async def window(child: live.Child, requests: live.Requests, spans_per_request: int, args: argparse.Namespace,
                 downstream: live.Child) -> tuple[live.Window, live.Drain]:
    import grpc

    opts = [("grpc.max_send_message_length", live.MAX_MESSAGE), ("grpc.max_receive_message_length", live.MAX_MESSAGE)]
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{child.ports['grpc']}", options=opts)
    try:
        await asyncio.wait_for(channel.channel_ready(), timeout=live.START_TIMEOUT_S)
        call = channel.unary_unary(live.METHOD, request_serializer=None, response_deserializer=None)
        before = live.counters(child.ports["metrics"])
        w = await live.drive(call, requests, spans_per_request, args.warmup, args.seconds, args.inflight, child,
                             downstream if args.export else None)
        return w, await live.wait_decided(child, before, w.sent_ok, export=args.export)
    finally:
        await channel.close()


def held(child: live.Child) -> str:
    """What the aged service holds now, from its own metrics, and its resident memory."""
    m = live.scrape(child.ports["metrics"])
    return (f"{live.total(m, 'faultgate_decision_cache_traces'):>7,.0f} {live.total(m, 'faultgate_amend_store_runs'):>6,.0f}"
            f" {live.total(m, 'faultgate_gc_collections_total', generation='2'):>4,.0f}"
            f" {live.rss_bytes(child.pid) / 2**20:>7.1f}")


async def rounds(args: argparse.Namespace, workdir: Path, downstream: live.Child,
                 template: tuple[bytes, list[int], int], children: list[live.Child]) -> int:
    live.on_sigterm_cancel()
    body, offsets, spans_per_request = template
    requests = live.Requests(body, offsets, first_seq=time.time_ns())
    port = downstream.ports["grpc"] if args.export else None
    aged = live.spawn("aged", live.serve_argv(live.service_config(workdir, "aged", port)), workdir, live.SERVER_CPU)
    children.append(aged)
    live.wait_started(aged)
    ratios: list[float] = []
    problems: list[str] = []
    print(f"{'round':>5} {'aged spans/s':>12} {'CPU us/span':>11} {'fresh spans/s':>13} {'CPU us/span':>11}"
          f" {'aged/fresh':>10} {'CPU%':>9}  aged holds: {'traces':>7} {'kept':>6} {'gc2':>4} {'RSS MB':>7}  load",
          flush=True)
    for rnd in range(1, args.rounds + 1):
        fresh = live.spawn(f"fresh{rnd}", live.serve_argv(live.service_config(workdir, f"fresh{rnd}", port)), workdir,
                           live.SERVER_CPU)
        children.append(fresh)
        live.wait_started(fresh)
        order = [("aged", aged), ("fresh", fresh)] if rnd % 2 else [("fresh", fresh), ("aged", aged)]
        got = {name: await window(child, requests, spans_per_request, args, downstream) for name, child in order}
        live.stop([fresh])
        children.remove(fresh)
        (a, a_drain), (f, f_drain) = got["aged"], got["fresh"]
        for name, (w, d) in got.items():
            problems += [f"round {rnd} {name}: {p}" for p in d.problems]
            if w.refused:
                problems.append(f"round {rnd} {name}: {w.refused} spans refused ({w.first_error})")
        ratio = a.cpu_us_per_span / f.cpu_us_per_span
        ratios.append(ratio)
        print(f"{rnd:>5} {a.spans_per_s:>12,.0f} {a.cpu_us_per_span:>11.2f} {f.spans_per_s:>13,.0f} {f.cpu_us_per_span:>11.2f}"
              f" {ratio:>10.3f} {a.server_util * 100:>4.0f}/{f.server_util * 100:<3.0f}%  {'':>11} {held(aged)}"
              f"  {os.getloadavg()[0]:.1f}", flush=True)
    later = ratios[1:] or ratios
    print(f"aged/fresh CPU us/span, rounds {2 if len(ratios) > 1 else 1}..{len(ratios)}: median {statistics.median(later):.3f} "
          f"[{min(later):.3f}-{max(later):.3f}]")
    for p in problems[:20]:
        print(f"PROBLEM: {p}")
    print(f"RESULT aged_vs_fresh={statistics.median(later):.3f}", flush=True)
    return 1 if problems else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--warmup", type=float, default=2.0)
    p.add_argument("--inflight", type=int, default=8)
    p.add_argument("--export", action="store_true", help="both services pass every span on (live.py's export)")
    args = p.parse_args()
    if not (1 <= args.rounds <= 50 and 0.5 <= args.seconds <= 120 and 0 <= args.warmup <= 60 and 1 <= args.inflight <= 256):
        live.die("--rounds 1..50, --seconds 0.5..120, --warmup 0..60, --inflight 1..256")
    if not live.pinning():
        live.die("CPUs 0 and 1 are not both available: the two services would not share one core")
    os.sched_setaffinity(0, {live.CLIENT_CPU})  # before any child: they move themselves to CPU 0
    live.tune_malloc()
    # SIGTERM (e.g. a CI timeout) must still reach the finally below that kills the children
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    template = live.build_template(32, random.Random(20261129))
    workdir = Path(tempfile.mkdtemp(prefix="faultgate-bench-aged-"))
    children: list[live.Child] = []
    try:
        downstream = live.spawn_null("downstream", workdir, live.CLIENT_CPU)
        children.append(downstream)
        live.wait_started(downstream)
        return asyncio.run(rounds(args, workdir, downstream, template, children))
    except asyncio.CancelledError:
        live.die("interrupted (SIGTERM)", 143)
    finally:
        live.stop(children)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
