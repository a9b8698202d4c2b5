"""``faultgate-stream demo``: the service on its defaults with the bundled example traces
replayed into it over OTLP/gRPC; prints each verdict as it is decided and where the
metrics are. ``--keep-running`` leaves the service up afterwards."""
from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
import threading
import time
import urllib.request
from pathlib import Path

from faultgate_stream.config import ConfigError, load
from faultgate_stream.model.verdict import EarlyFinding, RunVerdict

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DEMO_FILES = ("traces/traces.json", "traces/retail_gaps.json", "formats/openinference.json")
DEMO_GOLDEN = "traces/golden.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="YAML config (default: built-in defaults)")
    p.add_argument("--examples", default=str(EXAMPLES), help="folder of the bundled examples")
    p.add_argument("--keep-running", action="store_true", help="leave the service up until Ctrl-C")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for every verdict")


class _Printer:
    """A verdict sink that prints one line per verdict and counts them."""

    def __init__(self) -> None:
        self.count = 0
        self.done = threading.Condition()

    def early(self, f: EarlyFinding) -> None:
        print(f"  early   trace …{f.trace_id[-8:]}  {f.check}: {f.reason[:90]}")

    def verdict(self, v: RunVerdict) -> None:
        fired = ", ".join(r.check for r in v.fired) or "-"
        print(f"  {'FAILED' if not v.clean else 'clean ':<6}  {v.agent:<16} {v.scenario[:22]:<22} "
              f"trace …{v.key.trace_id[-8:]}  {v.completion.value:<6} steps={v.steps:<3} fired: {fired}")
        with self.done:
            self.count += 1
            self.done.notify_all()


def run(args: argparse.Namespace) -> int:
    from faultgate_stream.cli.replay import GrpcSender, replay
    from faultgate_stream.pipeline import assemble_runs
    from faultgate_stream.read.files import read_file
    from faultgate_stream.service import Service, configure_logging

    examples = Path(args.examples)
    files = [str(examples / f) for f in DEMO_FILES]
    try:
        config = load(args.config, os.environ)
        expected = sum(len(assemble_runs(read_file(f)[1])) for f in files)
    except (ConfigError, ValueError, OSError) as e:
        print(f"faultgate-stream: {e}", file=sys.stderr)
        return 2
    config = dataclasses.replace(config, checks=dataclasses.replace(config.checks, golden=str(examples / DEMO_GOLDEN)),
                                 log=dataclasses.replace(config.log, verdicts=False))
    configure_logging("warning")
    printer = _Printer()
    service = Service(config, extra_sinks=[printer])
    try:
        service.start()
    except OSError as e:
        print(f"faultgate-stream: cannot start the service: {e}", file=sys.stderr)
        return 2
    ports = service.ports
    print(f"faultgate-stream listening: OTLP/gRPC :{ports.get('grpc')}, OTLP/HTTP :{ports.get('http')}, "
          f"metrics :{ports['metrics']}")
    print(f"replaying {len(files)} example files ({expected} agent runs) over OTLP/gRPC; verdicts arrive "
          f"{config.assemble.root_grace:g}s after each run's root span:")
    sender = GrpcSender(f"127.0.0.1:{ports['grpc']}")
    try:
        replay(files, sender)
    finally:
        sender.close()
    deadline = time.monotonic() + args.timeout
    with printer.done:
        while printer.count < expected and time.monotonic() < deadline:
            printer.done.wait(0.2)
    metrics_url = f"http://127.0.0.1:{ports['metrics']}/metrics"
    print(f"\n{printer.count}/{expected} runs decided. Metrics: {metrics_url}")
    with urllib.request.urlopen(metrics_url, timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(("faultgate_runs_total", "faultgate_check_fired_total")):
                print("  " + line)
    if args.keep_running:
        print("service running; Ctrl-C to stop")
        stop = threading.Event()
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        stop.wait()
    service.shutdown()
    return 0 if printer.count == expected else 1
