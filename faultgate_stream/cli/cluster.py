"""``faultgate-stream cluster --replicas N``: the one-host layout. One process is one core
(the GIL), so a many-core host runs N ``serve`` replicas on N local ports with a gateway
OpenTelemetry Collector in front whose ``load_balancing`` exporter (``routing_key:
traceID``, static resolver) sends every span of a trace to the same replica. The collector
is the router; nothing here looks at a span.

The gateway runs ``deploy/collector/gateway-static.yaml`` as shipped, merged with a small
file this command writes (the replica list, and the gateway's own telemetry port), so the
replica list can change while it runs: rewrite that file, SIGHUP the collector, which
re-reads its config and restarts its pipelines in-process (``Cluster.add_replica``).

It needs a collector with the load-balancing exporter: ``--collector PATH``,
``$FAULTGATE_OTELCOL``, or ``otelcol-contrib`` on PATH (``scripts/install_peers.sh`` builds
one from ``deploy/collector/builder-config.yaml``).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GATEWAY_CONFIG = REPO / "deploy" / "collector" / "gateway-static.yaml"
COLLECTOR_NAMES = ("otelcol-contrib", "otelcol-faultgate", "otelcol")
READY_LINE = b"Everything is ready"
START_TIMEOUT = 30.0
# serve's own default shutdown_grace is 20 s; the replicas get that much and a little more.
STOP_TIMEOUT = 25.0


class ClusterError(RuntimeError):
    """The layout could not start: a missing collector, a port taken, a process that died."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--replicas", type=int, default=os.cpu_count() or 1,
                   help="serve processes to start (default: one per core)")
    p.add_argument("--config", help="YAML config every replica gets (its endpoints are set per replica)")
    p.add_argument("--listen", default="0.0.0.0:4317",
                   help="the gateway's OTLP/gRPC endpoint agents or collectors send to (default 0.0.0.0:4317)")
    p.add_argument("--first-port", type=int, default=0,
                   help="replica i gets OTLP/gRPC on FIRST+2i and metrics on FIRST+2i+1 "
                        "(default: free ports the kernel picks)")
    p.add_argument("--collector", default=os.environ.get("FAULTGATE_OTELCOL", ""),
                   help="collector binary with the load_balancing exporter (default: $FAULTGATE_OTELCOL, "
                        "else otelcol-contrib on PATH)")
    p.add_argument("--gateway-config", default=str(GATEWAY_CONFIG), help="gateway collector config")
    p.add_argument("--workdir", help="where the logs and the replica list go (default: a new temporary folder)")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def find_collector(explicit: str = "") -> str:
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise ClusterError(f"--collector {explicit}: not an executable file")
        return explicit
    for name in COLLECTOR_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise ClusterError("no OpenTelemetry Collector found: pass --collector PATH or set FAULTGATE_OTELCOL to a "
                       "collector with the load_balancing exporter (otelcol-contrib has it; "
                       "`bash scripts/install_peers.sh` builds one and prints its path)")


def _get(url: str, timeout: float = 1.0) -> tuple[int, bytes]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never via a proxy
    try:
        with opener.open(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""


@dataclass
class Replica:
    index: int
    grpc_port: int
    metrics_port: int
    log_path: Path
    process: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    def metrics(self) -> str:
        status, body = _get(self.metrics_url, timeout=5.0)
        if status != 200:
            raise ClusterError(f"replica {self.index}: {self.metrics_url} answered {status}")
        return body.decode()

    def sample(self, name: str, **labels: str) -> float:
        """Sum of the series of ``name`` whose labels include ``labels`` (0 when absent)."""
        total = 0.0
        for line in self.metrics().splitlines():
            if not (line.startswith(name + "{") or line.startswith(name + " ")):
                continue
            series, value = line.split(" # ")[0].rsplit(" ", 1)
            if all(f'{k}="{v}"' in series for k, v in labels.items()):
                total += float(value)
        return total

    def verdicts(self) -> list[dict]:
        """The verdict lines this replica has logged (serve logs one JSON line per verdict)."""
        out = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            if line.startswith("{") and '"verdict"' in line:
                try:
                    doc = json.loads(line)
                except ValueError:  # a line cut short by a process still writing it
                    continue
                if doc.get("event") == "verdict":
                    out.append(doc)
        return out


class Cluster:
    """N serve replicas and one gateway collector, all child processes of this one."""

    def __init__(self, replicas: int, *, collector: str, listen: str, config: str | None = None,
                 first_port: int = 0, gateway_config: str | Path = GATEWAY_CONFIG,
                 workdir: str | Path | None = None, env: dict[str, str] | None = None) -> None:
        if replicas < 1:
            raise ClusterError("--replicas must be >= 1")
        self.collector = collector
        self.listen = listen
        self.config = config
        self.first_port = first_port
        self.gateway_config = Path(gateway_config)
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="faultgate-cluster-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.env = dict(os.environ if env is None else env)
        self.wanted = replicas
        self.replicas: list[Replica] = []
        self.gateway: subprocess.Popen | None = None
        self.gateway_log = self.workdir / "gateway.log"
        # Ports handed out, the gateway's own listen port among them: a port the kernel picks
        # is free only until someone binds it, and none of ours is bound until its process
        # starts, so two picks could name one port (a replica on the gateway's port, seen).
        self._taken: set[int] = set()
        try:
            self._taken.add(int(listen.rpartition(":")[2]))
        except ValueError:
            pass  # the gateway's own config check names a malformed endpoint
        self.gateway_metrics_port = self._free_port()
        self.override_path = self.workdir / "replicas.yaml"

    # ------------------------------------------------------------------ replicas
    def _ports(self, index: int) -> tuple[int, int]:
        if self.first_port:
            return self.first_port + 2 * index, self.first_port + 2 * index + 1
        return self._free_port(), self._free_port()

    def _free_port(self) -> int:
        """A port the kernel says is free that no other part of the cluster was given."""
        for _ in range(100):
            port = free_port()
            if port not in self._taken:
                self._taken.add(port)
                return port
        raise ClusterError("no free port the cluster has not already handed out")

    def _wal_dir(self, index: int) -> str:
        """Each replica its own write-ahead log: ``durability.wal.dir``/replica-<i>, the same
        for a replica started again, so that it replays its own (two processes appending to
        one log would interleave sequences and cover each other's records)."""
        from faultgate_stream import config as service_config

        try:
            base = service_config.load(self.config, self.env).durability.wal.dir
        except service_config.ConfigError:
            return ""   # the replica itself refuses the config, naming every problem
        return str(Path(base) / f"replica-{index}") if base else ""

    def _start_replica(self, index: int) -> Replica:
        grpc_port, metrics_port = self._ports(index)
        r = Replica(index, grpc_port, metrics_port, self.workdir / f"replica-{index}.log")
        env = {**self.env,
               "FAULTGATE_STREAM__RECEIVE__GRPC_ENDPOINT": r.endpoint,
               # the gateway speaks OTLP/gRPC only; an HTTP port per replica would be unused
               "FAULTGATE_STREAM__RECEIVE__HTTP_ENDPOINT": '""',  # read as YAML: the empty string
               "FAULTGATE_STREAM__METRICS__ENDPOINT": f"127.0.0.1:{metrics_port}"}
        wal = self._wal_dir(index)
        if wal:
            env["FAULTGATE_STREAM__DURABILITY__WAL__DIR"] = wal
        cmd = [sys.executable, "-m", "faultgate_stream.cli.main", "serve"]
        if self.config:
            cmd += ["--config", self.config]
        with r.log_path.open("ab") as log:
            # A session of its own: Ctrl-C reaches this process only, which stops the
            # gateway before the replicas instead of everything at once.
            r.process = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        self.replicas.append(r)
        return r

    def _wait_replica(self, r: Replica) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if r.process.poll() is not None:
                raise ClusterError(f"replica {r.index} exited with {r.process.returncode}: "
                                   f"{_tail(r.log_path)}")
            try:
                if _get(f"http://127.0.0.1:{r.metrics_port}/readyz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise ClusterError(f"replica {r.index} not ready within {START_TIMEOUT:g}s: {_tail(r.log_path)}")

    # ------------------------------------------------------------------ gateway
    def _write_override(self) -> None:
        # JSON is YAML: the collector merges this over gateway-static.yaml, lists replaced whole.
        doc = {"receivers": {"otlp": {"protocols": {"grpc": {"endpoint": self.listen}}}},
               "exporters": {"load_balancing": {"resolver": {"static": {
                   "hostnames": [r.endpoint for r in self.replicas]}}}},
               "service": {"telemetry": {"metrics": {"readers": [{"pull": {"exporter": {"prometheus": {
                   "host": "127.0.0.1", "port": self.gateway_metrics_port}}}}]}}}}
        tmp = self.override_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1) + "\n")
        tmp.replace(self.override_path)

    def _gateway_ready_since(self, offset: int, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.gateway.poll() is not None:
                raise ClusterError(f"the gateway collector exited with {self.gateway.returncode}: "
                                   f"{_tail(self.gateway_log)}")
            with self.gateway_log.open("rb") as f:
                f.seek(offset)
                if READY_LINE in f.read():
                    return
            time.sleep(0.05)
        raise ClusterError(f"the gateway collector was not ready within {timeout:g}s: {_tail(self.gateway_log)}")

    def _start_gateway(self) -> None:
        self._write_override()
        # FAULTGATE_REPLICAS is what gateway-static.yaml reads; the override file replaces it,
        # but the reference must still resolve.
        env = {**self.env, "FAULTGATE_REPLICAS": json.dumps([r.endpoint for r in self.replicas])}
        with self.gateway_log.open("ab") as log:
            self.gateway = subprocess.Popen(
                [self.collector, "--config", f"file:{self.gateway_config}", "--config", f"file:{self.override_path}"],
                env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self._gateway_ready_since(0)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> Cluster:
        try:
            started = [self._start_replica(i) for i in range(self.wanted)]
            for r in started:
                self._wait_replica(r)
            self._start_gateway()
        except BaseException:
            self.stop()
            raise
        return self

    def add_replica(self) -> tuple[Replica, float]:
        """Start one more replica, put it in the gateway's ring and reload the gateway
        (SIGHUP). Returns the replica and the seconds from the signal to the gateway's
        pipelines running again (its receiver refuses connections meanwhile; senders retry)."""
        r = self._start_replica(len(self.replicas))
        self._wait_replica(r)
        self._write_override()
        offset = self.gateway_log.stat().st_size
        started = time.monotonic()
        self.gateway.send_signal(signal.SIGHUP)
        self._gateway_ready_since(offset)
        return r, time.monotonic() - started

    def stop(self) -> None:
        """Gateway first (it drains its queues into the replicas), then the replicas (each
        completes its runs in flight as ``shutdown`` and flushes its export queue)."""
        if self.gateway is not None:
            _terminate(self.gateway, STOP_TIMEOUT)
        for r in self.replicas:
            if r.process is not None and r.process.poll() is None:
                r.process.terminate()
        for r in self.replicas:
            if r.process is not None and not _terminate(r.process, STOP_TIMEOUT):
                print(f"faultgate-stream: replica {r.index} did not stop within {STOP_TIMEOUT:g}s and was killed; "
                      f"its stacks are in {r.log_path}", file=sys.stderr)

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


def _terminate(p: subprocess.Popen, timeout: float) -> bool:
    """SIGTERM, then SIGKILL after ``timeout``; False when it had to kill."""
    if p.poll() is None:
        p.terminate()
    try:
        p.wait(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(timeout=timeout)
        return False


def _tail(path: Path, lines: int = 15) -> str:
    if not path.exists():
        return "(no log)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def run(args: argparse.Namespace) -> int:
    try:
        collector = find_collector(args.collector)
        cluster = Cluster(args.replicas, collector=collector, listen=args.listen, config=args.config,
                          first_port=args.first_port, gateway_config=args.gateway_config, workdir=args.workdir)
    except ClusterError as e:
        print(f"faultgate-stream: {e}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        cluster.start()
    except ClusterError as e:
        print(f"faultgate-stream: {e}", file=sys.stderr)
        return 2
    print(f"gateway collector: OTLP/gRPC {args.listen} -> load_balancing (traceID) over {len(cluster.replicas)} "
          f"replicas; its own metrics http://127.0.0.1:{cluster.gateway_metrics_port}/metrics")
    for r in cluster.replicas:
        print(f"  replica {r.index}: OTLP/gRPC {r.endpoint}  metrics {r.metrics_url}  log {r.log_path}")
    print(f"logs and the replica list: {cluster.workdir}; metrics are per replica, sum() them. Ctrl-C to stop")
    while not stop.wait(1.0):
        dead = [r.index for r in cluster.replicas if r.process.poll() is not None]
        if dead or cluster.gateway.poll() is not None:
            print(f"faultgate-stream: {'replica ' + str(dead) if dead else 'the gateway'} exited; stopping",
                  file=sys.stderr)
            cluster.stop()
            return 1
    counts = []
    for r in cluster.replicas:
        try:
            counts.append(int(r.sample("faultgate_runs_total")))
        except (OSError, ClusterError):
            counts.append(-1)
    cluster.stop()
    print("runs decided per replica: " + ", ".join(f"{i}: {n}" if n >= 0 else f"{i}: ?" for i, n in enumerate(counts)))
    return 0
