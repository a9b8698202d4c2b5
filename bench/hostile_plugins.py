"""What a hostile plug-in does to the service around it: OTLP Export latency and /metrics
and /readyz latency while the plug-in sleeps, spins, allocates or holds the GIL in one C
call, each beside the same service with no plug-in.

    .venv/bin/python bench/hostile_plugins.py [--seconds 8] [--rate 40]

Each configuration is its own ``serve`` process (the plug-in module written into its
working directory, named as ``module:Class``), with the default ``checks.isolation``
(5 ms CPU a run, 1 s deadline, switched off after 5 overruns in a row). This process sends
faultgate's retail gaps (13 runs, 78 spans) ``--rate`` times a second, fresh trace ids each
time, one request per run's spans, and scrapes ``/metrics`` and ``/readyz`` every 50 ms from
a second thread; then waits until every run is decided. It prints, per configuration, the
Export calls' and the scrapes' median, p99 and worst latency, the runs decided against the
runs sent, and what the plug-in was counted for. Latency, not throughput: what an agent's
exporter and a kubelet see. No comparison sets the exit code; a run not decided does (1).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from faultgate_stream.cli.replay import GrpcSender, load_request, shift_to  # noqa: E402

CORPUS = ROOT / "examples" / "traces" / "retail_gaps.json"
PLUGINS = '''
import time
from faultgate_stream.checks import api


class Sleeps(api.Check):
    name = "hostile"

    def finish(self, state, run):
        time.sleep(10)
        return api.passed()


class Spins(api.Check):
    name = "hostile"

    def finish(self, state, run):
        while True:
            pass


class Allocates(api.Check):
    name = "hostile"

    def finish(self, state, run):
        held = []
        while True:
            held.append(bytearray(1 << 20))


class HoldsTheGil(api.Check):
    """One C call that holds the GIL for about a second: what no thread can interrupt."""
    name = "hostile"

    def finish(self, state, run):
        return api.passed(str(sum(range(30_000_000))))
'''
CONFIGS = {"none": None, "sleeps": "Sleeps", "spins": "Spins", "allocates": "Allocates", "gil": "HoldsTheGil"}


def config_text(plugin: str | None) -> str:
    lines = ['receive:', '  grpc_endpoint: "127.0.0.1:0"', '  http_endpoint: ""', 'assemble:', '  root_grace: 0.3s',
             'metrics:', '  endpoint: "127.0.0.1:0"', 'log:', '  verdicts: false', 'shutdown_grace: 2s']
    if plugin:
        lines += ["checks:", f'  plugins: ["bench_hostile:{plugin}"]']
    return "\n".join(lines) + "\n"


def start(workdir: Path, name: str, plugin: str | None) -> tuple[subprocess.Popen, dict, Path]:
    cfg = workdir / f"{name}.yaml"
    cfg.write_text(config_text(plugin))
    log = workdir / f"{name}.log"
    script = Path(sys.executable).parent / "faultgate-stream"
    proc = subprocess.Popen([str(script), "serve", "--config", str(cfg)], cwd=workdir, stdout=open(log, "wb"),
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if '"started"' in line:
                return proc, json.loads(line)["endpoints"], log
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    sys.exit(f"{name} did not start:\n{log.read_text()[-2000:]}")


def scrape(port: int, path: str = "metrics") -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/{path}", timeout=30) as r:
        return r.read().decode()


def total(text: str, name: str, **labels: str) -> float:
    out = 0.0
    for line in text.splitlines():
        if line.startswith(name) and all(f'{k}="{v}"' in line for k, v in labels.items()):
            try:
                out += float(line.rsplit(" ", 1)[1])
            except ValueError:
                pass
    return out


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def measure(name: str, plugin: str | None, workdir: Path, seconds: float, rate: float) -> dict:
    proc, ports, log = start(workdir, name, plugin)
    template = load_request(str(CORPUS))
    sender = GrpcSender(f"127.0.0.1:{ports['grpc']}")
    sender.wait_ready()
    scrapes: list[float] = []
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            for path in ("metrics", "readyz"):
                t0 = time.perf_counter()
                try:
                    scrape(ports["metrics"], path)
                    scrapes.append(time.perf_counter() - t0)
                except OSError:
                    scrapes.append(float("inf"))
            time.sleep(0.05)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    rng = random.Random(33)
    calls: list[float] = []
    sent_runs = 0
    began = time.monotonic()
    n = 0
    while time.monotonic() - began < seconds:
        req = type(template)()
        req.CopyFrom(template)
        shift_to(req, time.time_ns())
        fresh: dict[bytes, bytes] = {}
        for rs in req.resource_spans:
            for ss in rs.scope_spans:
                for s in ss.spans:
                    s.trace_id = fresh.setdefault(s.trace_id, rng.getrandbits(128).to_bytes(16, "big"))
        t0 = time.perf_counter()
        sender.send(req)
        calls.append(time.perf_counter() - t0)
        sent_runs += len(fresh)
        n += 1
        wait = began + n / rate - time.monotonic()
        if wait > 0:
            time.sleep(wait)
    deadline = time.monotonic() + 120
    decided = 0.0
    while time.monotonic() < deadline:
        text = scrape(ports["metrics"])
        decided = total(text, "faultgate_runs_total{")
        if decided >= sent_runs:
            break
        time.sleep(0.5)
    stop.set()
    poller.join(35)
    text = scrape(ports["metrics"])
    sender.close()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
    return {"calls": calls, "scrapes": scrapes, "sent": sent_runs, "decided": decided,
            "overruns": total(text, "faultgate_check_overruns_total{"),
            "off": total(text, "faultgate_checks_off{"),
            "undecided": total(text, "faultgate_runs_total{", verdict="undecided")}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--rate", type=float, default=40.0, help="requests (of the 13 retail runs) a second")
    p.add_argument("--only", nargs="*", choices=list(CONFIGS), help="these configurations")
    args = p.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="fgs-hostile-"))
    (workdir / "bench_hostile.py").write_text(PLUGINS)
    os.environ.setdefault("MALLOC_ARENA_MAX", "2")
    problems = 0
    print(f"{'plug-in':<10} {'export p50':>10} {'p99':>8} {'max':>8}   {'scrape p50':>10} {'p99':>8} {'max':>8}"
          f"   {'runs decided':>14} {'undecided':>9} {'overruns':>8} {'off':>3}   (milliseconds)")
    try:
        for name, plugin in CONFIGS.items():
            if args.only and name not in args.only:
                continue
            r = measure(name, plugin, workdir, args.seconds, args.rate)
            c, s = [x * 1e3 for x in r["calls"]], [x * 1e3 for x in r["scrapes"]]
            print(f"{name:<10} {statistics.median(c):>10.1f} {pct(c, 0.99):>8.1f} {max(c):>8.1f}   "
                  f"{statistics.median(s):>10.1f} {pct(s, 0.99):>8.1f} {max(s):>8.1f}   "
                  f"{r['decided']:>6.0f}/{r['sent']:<7} {r['undecided']:>9.0f} {r['overruns']:>8.0f} {r['off']:>3.0f}",
                  flush=True)
            problems += r["decided"] < r["sent"]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
