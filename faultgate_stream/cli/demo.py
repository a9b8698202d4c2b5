"""``faultgate-stream demo``: the service on its defaults with the bundled example traces
replayed into it over OTLP/gRPC; prints each verdict as it is decided, the final counts,
and where to look next. ``--keep-running`` leaves the service (and its metrics) up until
Ctrl-C. Needs nothing but the package: no collector, no fixed free ports (a taken
default port is swapped for a free one, and the demo says so)."""
from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

from faultgate_stream.checks.config import BindingConfig
from faultgate_stream.cli import ports as port_check
from faultgate_stream.config import ConfigError, ServiceConfig, load
from faultgate_stream.cli.terminal import clip, run_labels
from faultgate_stream.cli.wait import until_set
from faultgate_stream.model.verdict import CLEAN, FAILED, UNDECIDED, EarlyFinding, RunVerdict

# The bundled examples: inside the package when it was installed from its wheel
# (scripts/build_wheel.sh puts them there), else the checkout's examples/ folder.
_PACKAGED = Path(__file__).resolve().parents[1] / "examples"
EXAMPLES = _PACKAGED if _PACKAGED.is_dir() else Path(__file__).resolve().parents[2] / "examples"
DEMO_FILES = ("traces/traces.json", "traces/retail_gaps.json", "formats/openinference.json")
DEMO_GOLDEN = "traces/golden.json"
# retail_gaps.json exists to show business-policy gaps: its runs (agent "retail") are
# checked against the policy they were written for, as `check --policy` would.
DEMO_BINDINGS = ((("retail",), "policies/retail.json"),)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="YAML config (default: built-in defaults)")
    p.add_argument("--examples", default=str(EXAMPLES), help="folder of the bundled examples")
    p.add_argument("--keep-running", action="store_true", help="leave the service up until Ctrl-C")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for every verdict")


# What each completion state means, said once under the rows for the states that appeared.
CLOSED = {
    "complete": "every span of the input had been read",
    "grace": "its root span arrived and root_grace ({grace:g}s) passed with no span to add",
    "max-duration": "max_run_duration passed since its first span before that",
    "orphan": "no root span arrived; closed idle_timeout after its last span",
    "evicted": "closed early to make room: a capacity bound was reached",
    "shutdown": "the service stopped with the run in flight",
}
REASON_WIDTH = 60  # an early line, its columns included, about as wide as a verdict row
SCENARIO_WIDTH = 28  # the bundled examples' longest scenario key is 27 characters
LEGEND = """\
Each run is printed as it is decided: its verdict (FAILED: a check fired; clean: none did; undecided: none
fired but a check could not see its input), agent, scenario, trace id, how the run was closed (below),
tool steps, and the checks that fired. An "early" line is a check that fired the moment one span arrived,
before its run was closed."""


class _Printer:
    """A verdict sink that prints one line per verdict and counts them by verdict."""

    def __init__(self, labels: dict[tuple[str, str], str]) -> None:
        self.labels = labels
        self.traces = {k[0]: label.partition("/")[0] for k, label in labels.items()}
        self.width = max((len(v) for v in labels.values()), default=12)
        self.count = 0
        self.verdicts: Counter[str] = Counter()
        self.closed: Counter[str] = Counter()
        self.done = threading.Condition()

    def _row(self, verdict: str, agent: str, scenario: str, trace: str, rest: str) -> str:
        return f"  {verdict:<9}  {agent:<16} {scenario:<{SCENARIO_WIDTH}} {trace:<{self.width}}  {rest}"

    def header(self) -> str:
        return self._row("verdict", "agent", "scenario", "trace", f"{'closed':<8} {'steps':>5}  fired")

    def early(self, f: EarlyFinding) -> None:
        print(self._row("early", f.agent, "", self.traces.get(f.trace_id, f.trace_id),
                        clip(f"{f.check}: {f.reason}", REASON_WIDTH)))

    def verdict(self, v: RunVerdict) -> None:
        fired = ", ".join(r.check for r in v.fired) or "-"
        print(self._row(v.verdict.upper() if v.failed else v.verdict, v.agent, clip(v.scenario, SCENARIO_WIDTH),
                        self.labels.get(v.key, v.key.trace_id), f"{v.completion.value:<8} {v.steps:>5}  {fired}"))
        with self.done:
            self.count += 1
            self.verdicts[v.verdict] += 1
            self.closed[v.completion.value] += 1
            self.done.notify_all()

    def summary(self, expected: int, timeout: float, grace: float) -> list[str]:
        """The counts by verdict, then what each way of closing a run that appeared means."""
        with self.done:
            verdicts, closed, count = dict(self.verdicts), dict(self.closed), self.count
        counts = ", ".join(f"{verdicts.get(k, 0)} {k}" for k in (FAILED, CLEAN, UNDECIDED))
        head = (f"{count} runs decided: {counts}." if count == expected else
                f"{count} of {expected} runs decided within {timeout:g}s: {counts}; {expected - count} not decided.")
        return [head] + [f"closed {state}: {CLOSED.get(state, state).format(grace=grace)} ({n} run{'s' * (n != 1)})"
                         for state, n in closed.items()]


def run(args: argparse.Namespace) -> int:
    from faultgate_stream.cli.replay import GrpcSender, replay
    from faultgate_stream.pipeline import assemble_runs
    from faultgate_stream.read.files import read_file
    from faultgate_stream.service import Service, configure_logging

    examples = Path(args.examples)
    files = [str(examples / f) for f in DEMO_FILES]
    try:
        config = load(args.config, os.environ)
        keys = [r.key for f in files for r in assemble_runs(read_file(f)[1])]
    except (ConfigError, ValueError, OSError) as e:
        print(f"faultgate-stream: {e}", file=sys.stderr)
        return 2
    bindings = tuple(BindingConfig(agents=agents, policy=str(examples / policy)) for agents, policy in DEMO_BINDINGS)
    config = dataclasses.replace(config, checks=dataclasses.replace(config.checks, golden=str(examples / DEMO_GOLDEN),
                                                                    bindings=config.checks.bindings + bindings),
                                 log=dataclasses.replace(config.log, verdicts=False))
    config, swapped = _free_ports(config)
    configure_logging("warning")
    expected = len(keys)
    printer = _Printer(run_labels(keys))
    try:
        service = Service(config, extra_sinks=[printer])
        service.start()
    except (OSError, RuntimeError) as e:  # grpc reports a failed bind as RuntimeError
        print(f"faultgate-stream: cannot start the service: {e}", file=sys.stderr)
        return 2
    ports = service.ports
    names = {"receive.grpc_endpoint": "grpc", "receive.http_endpoint": "http", "metrics.endpoint": "metrics"}
    for key, endpoint in swapped.items():
        print(f"port {endpoint.rpartition(':')[2]} ({key}) is taken; using :{ports[names[key]]} instead")
    print(f"faultgate-stream listening: OTLP/gRPC :{ports.get('grpc')}, OTLP/HTTP :{ports.get('http')}, "
          f"metrics :{ports['metrics']}")
    print(f"replaying {len(files)} example files ({expected} agent runs) over OTLP/gRPC; verdicts arrive "
          f"{config.assemble.root_grace:g}s after each run's root span.")
    print(LEGEND)
    print(printer.header())
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
    print()
    for line in printer.summary(expected, args.timeout, config.assemble.root_grace):
        print(line)
    print("The counts the metrics endpoint showed:")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never via a proxy
    with opener.open(metrics_url, timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(("faultgate_runs_total", "faultgate_check_fired_total")):
                print("  " + line)
    print(_next_steps(metrics_url, ports, examples, args.keep_running))
    if args.keep_running:
        print("service running; Ctrl-C to stop")
        stop = threading.Event()
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        until_set(stop)
    service.shutdown()
    return 0 if printer.count == expected else 1


def _free_ports(config: ServiceConfig) -> tuple[ServiceConfig, dict[str, str]]:
    """The config with every taken listening port swapped for port 0 (the kernel picks a
    free one), and the swapped endpoints by config key."""
    swapped = {k: e for k, e in port_check.endpoints(config).items() if port_check.bind_error(e)}

    def free(key: str, endpoint: str) -> str:
        return f"{endpoint.rpartition(':')[0]}:0" if key in swapped else endpoint

    receive = dataclasses.replace(config.receive,
                                  grpc_endpoint=free("receive.grpc_endpoint", config.receive.grpc_endpoint),
                                  http_endpoint=free("receive.http_endpoint", config.receive.http_endpoint))
    metrics = dataclasses.replace(config.metrics, endpoint=free("metrics.endpoint", config.metrics.endpoint))
    return dataclasses.replace(config, receive=receive, metrics=metrics), swapped


def _next_steps(metrics_url: str, ports: dict[str, int], examples: Path, keep_running: bool) -> str:
    metrics = (f"  the metrics:        curl {metrics_url}  (Ctrl-C ends them)" if keep_running else
               f"  the metrics:        they were at {metrics_url} while the demo ran; "
               "`faultgate-stream demo --keep-running` keeps them up")
    return "\n".join([
        "",
        "Where to look next:",
        metrics,
        f"  the live service:   faultgate-stream serve --config {examples / 'config.yaml'}   "
        "(every key, with its default; `serve --help` for the environment overrides)",
        "  from a collector:   exporters: {otlp_grpc: {endpoint: \"<this host>:4317\", tls: {insecure: true}}}"
        "  (deploy/collector/ has agent, gateway and downstream configs)",
        f"  replay a file:      faultgate-stream replay {examples / 'traces' / 'traces.json'} "
        f"--endpoint 127.0.0.1:{ports.get('grpc')}" + ("" if keep_running else "  (into serve, or this demo "
                                                        "with --keep-running)"),
        f"  check offline:      faultgate-stream check {examples / 'traces' / 'retail_gaps.json'} "
        f"--policy {examples / 'policies' / 'retail.json'}",
    ])
