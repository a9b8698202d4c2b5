"""Real peers for end-to-end tests: an OpenTelemetry Collector and a Prometheus.

Both run as child processes on 127.0.0.1 and free ports, with their files under the
test's ``tmp_path``. ``scripts/install_peers.sh`` installs them (``scripts/setup.sh``
runs it); nothing here installs or skips: a missing or broken peer fails the test.

Typical use::

    grpc = free_port()
    with running_collector(f'''
    receivers:
      otlp:
        protocols:
          grpc: {{endpoint: 127.0.0.1:{grpc}}}
    exporters:
      debug: {{}}
    service:
      pipelines:
        traces: {{receivers: [otlp], exporters: [debug]}}
    ''', tmp_path) as collector:
        ...
        collector.stop()   # an outage: the same ports come back on start()
        collector.start()

    with running_prometheus([f"127.0.0.1:{port}"], tmp_path) as prom:
        eventually(lambda: prom.query("up") or None)
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
INSTALL_SCRIPT = ROOT / "scripts" / "install_peers.sh"
HOST = "127.0.0.1"

T = TypeVar("T")


class PeerError(AssertionError):
    """A peer is missing, did not start, or answered wrongly.

    An AssertionError so that pytest reports it as a failure of the test, never as a skip.
    """


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now.

    The kernel picks it, so parallel tests do not collide; it can in principle be taken
    again before the peer binds it, which on a test machine is rare enough to accept.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def forwarding_collector_config(inbound: int, target: str, *, logs: bool = False, exporter_options: str = "") -> str:
    """A collector in front of the service, as an operator's agent tier is: OTLP/gRPC in on
    ``inbound``, batched, OTLP/gRPC out to ``target`` (traces, and logs when asked).
    ``exporter_options``: more YAML lines for the exporter (retry, queue), indented 4."""
    pipelines = "    traces: {receivers: [otlp], processors: [batch], exporters: [otlp]}\n"
    if logs:
        pipelines += "    logs: {receivers: [otlp], processors: [batch], exporters: [otlp]}\n"
    return f"""
receivers:
  otlp:
    protocols:
      grpc: {{endpoint: "127.0.0.1:{inbound}"}}
processors:
  batch: {{timeout: 200ms, send_batch_size: 256}}
exporters:
  otlp:
    endpoint: "{target}"
    tls: {{insecure: true}}
{exporter_options}service:
  pipelines:
{pipelines}"""


def eventually(probe: Callable[[], T | None], timeout: float = 20.0, interval: float = 0.2,
               what: str | Callable[[], str] = "condition") -> T:
    """Call ``probe`` until it returns something truthy, and return that.

    Peers work asynchronously (batching, flush intervals, scrape intervals), so tests poll
    instead of sleeping a guessed time. Raises PeerError naming ``what`` after ``timeout``;
    a callable ``what`` is called only then, so it can fetch diagnostics from a peer.
    """
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            result = probe()
            if result:
                return result
        except Exception as exc:  # a peer still starting may refuse or answer half-ready
            last_error = exc
        if time.monotonic() >= deadline:
            detail = f"; last error: {last_error!r}" if last_error else ""
            description = what() if callable(what) else what
            raise PeerError(f"{description} not reached within {timeout}s{detail}")
        time.sleep(interval)


# Peers are on loopback: a proxy from the environment must never sit in between.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _http_get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with _OPENER.open(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _tail(path: Path, lines: int = 40) -> str:
    if not path.exists():
        return "(no log written)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _stop_process(process: subprocess.Popen, timeout: float) -> None:
    """SIGTERM, then SIGKILL if the peer has not exited within ``timeout``."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)


# ----------------------------------------------------------------------- Collector


@functools.lru_cache(maxsize=1)
def collector_binary() -> Path:
    """The collector that ``scripts/install_peers.sh`` built for this checkout.

    The script owns the cache path (a hash of the builder manifest and the Go version), so
    it is asked rather than recomputed here. Fails, telling what to run, when the binary
    has not been built: building takes minutes and belongs to setup, not to a test.
    """
    result = subprocess.run(
        ["bash", str(INSTALL_SCRIPT), "--print-path"],
        capture_output=True, text=True, check=False,
    )
    if result.returncode != 0:
        raise PeerError(f"{INSTALL_SCRIPT} --print-path failed: {result.stderr.strip()}")
    binary = Path(result.stdout.strip())
    if not os.access(binary, os.X_OK):
        raise PeerError(
            f"the collector is not built at {binary}; run `bash scripts/install_peers.sh` "
            "(scripts/setup.sh does)"
        )
    return binary


@dataclass
class RunningCollector:
    """A collector child process whose config stays fixed across stop() and start().

    ``telemetry_port`` serves the collector's own Prometheus metrics on 127.0.0.1; it is
    also what readiness is judged by, together with the collector's log line saying that
    every component has started.
    """

    binary: Path
    config_path: Path
    telemetry_config_path: Path
    log_path: Path
    telemetry_port: int
    start_timeout: float = 30.0
    stop_timeout: float = 10.0
    process: subprocess.Popen | None = field(default=None, repr=False)

    READY_LINE = "Everything is ready"

    @property
    def metrics_url(self) -> str:
        return f"http://{HOST}:{self.telemetry_port}/metrics"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        """Start the collector and return once it is ready; PeerError if it is not."""
        if self.running:
            raise PeerError("the collector is already running")
        # The log is appended to across restarts, so readiness is read past this offset.
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log:
            # Our telemetry settings come first so that the test's own config, merged
            # after them, can still override any of them.
            self.process = subprocess.Popen(
                [str(self.binary), "--config", str(self.telemetry_config_path),
                 "--config", str(self.config_path)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                cwd=self.config_path.parent,
            )
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise PeerError(
                    f"the collector exited with {self.process.returncode} while starting; "
                    f"log {self.log_path}:\n{_tail(self.log_path)}"
                )
            if self._ready_since(offset):
                return
            time.sleep(0.1)
        self.stop()
        raise PeerError(
            f"the collector was not ready within {self.start_timeout}s; "
            f"log {self.log_path}:\n{_tail(self.log_path)}"
        )

    def _ready_since(self, offset: int) -> bool:
        with self.log_path.open("rb") as log:
            log.seek(offset)
            if self.READY_LINE.encode() not in log.read():
                return False
        try:
            status, _ = _http_get(self.metrics_url, timeout=1.0)
        except OSError:
            return False
        return status == 200

    def stop(self) -> None:
        """Stop the collector (SIGTERM, then SIGKILL after ``stop_timeout``)."""
        if self.process is not None:
            _stop_process(self.process, self.stop_timeout)

    def metrics(self) -> str:
        """The collector's own metrics, in Prometheus text format."""
        status, body = _http_get(self.metrics_url)
        if status != 200:
            raise PeerError(f"{self.metrics_url} answered {status}")
        return body.decode()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def _telemetry_config(port: int) -> str:
    # Without this every collector would serve its metrics on the default localhost:8888
    # and a second one in the same test, or a parallel test, would fail to bind.
    return (
        "service:\n"
        "  telemetry:\n"
        "    logs:\n"
        "      level: info\n"
        "    metrics:\n"
        "      level: normal\n"
        "      readers:\n"
        "        - pull:\n"
        "            exporter:\n"
        "              prometheus:\n"
        f"                host: {HOST}\n"
        f"                port: {port}\n"
    )


@contextlib.contextmanager
def running_collector(config_yaml: str, tmp_path: Path, name: str = "collector",
                      start_timeout: float = 30.0, binary: Path | None = None) -> Iterator[RunningCollector]:
    """Run the built collector (or ``binary``) with ``config_yaml`` until the block ends.

    Files go to ``tmp_path/name/`` (config.yaml, telemetry.yaml, collector.log), so one
    test can run several collectors under different names. The config should bind every
    endpoint to 127.0.0.1 on ports from free_port(); ``service.telemetry`` is provided.
    """
    workdir = tmp_path / name
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "config.yaml"
    config_path.write_text(config_yaml)
    telemetry_port = free_port()
    telemetry_config_path = workdir / "telemetry.yaml"
    telemetry_config_path.write_text(_telemetry_config(telemetry_port))
    collector = RunningCollector(
        binary=binary or collector_binary(),
        config_path=config_path,
        telemetry_config_path=telemetry_config_path,
        log_path=workdir / "collector.log",
        telemetry_port=telemetry_port,
        start_timeout=start_timeout,
    )
    collector.start()
    try:
        yield collector
    finally:
        collector.stop()


# ---------------------------------------------------------------------- Prometheus


@functools.lru_cache(maxsize=1)
def prometheus_version() -> tuple[int, int]:
    """(major, minor) of the ``prometheus`` on PATH; PeerError when there is none."""
    try:
        result = subprocess.run(["prometheus", "--version"], capture_output=True, text=True,
                                check=False)
    except FileNotFoundError:
        raise PeerError("prometheus is not on PATH; run `bash scripts/install_peers.sh`") from None
    match = re.search(r"version (\d+)\.(\d+)\.", result.stdout + result.stderr)
    if not match:
        raise PeerError(f"cannot read prometheus' version from: {result.stdout}{result.stderr}")
    return int(match.group(1)), int(match.group(2))


def _prometheus_config(targets: list[str], scrape_interval: str) -> str:
    lines = [
        "global:",
        f"  scrape_interval: {scrape_interval}",
        f"  evaluation_interval: {scrape_interval}",
        "scrape_configs:",
        "  - job_name: e2e",
        "    metrics_path: /metrics",
        f"    scrape_interval: {scrape_interval}",
        # The default 10s timeout exceeds a short interval, which Prometheus rejects.
        f"    scrape_timeout: {scrape_interval}",
    ]
    # Exemplars travel only in OpenMetrics, so it has to be asked for first. Prometheus
    # added scrape_protocols in 2.49 and rejects the unknown key before that; older
    # versions (Debian bookworm ships 2.42) already put OpenMetrics first in their Accept.
    if prometheus_version() >= (2, 49):
        lines += [
            "    scrape_protocols:",
            "      - OpenMetricsText1.0.0",
            "      - OpenMetricsText0.0.1",
            "      - PrometheusText0.0.4",
        ]
    lines += [
        "    static_configs:",
        "      - targets: " + json.dumps(list(targets)),
    ]
    return "\n".join(lines) + "\n"


@dataclass
class RunningPrometheus:
    """A Prometheus child process with exemplar storage, and small API helpers."""

    url: str
    process: subprocess.Popen = field(repr=False)
    config_path: Path
    log_path: Path

    def _api(self, path: str, params: dict[str, str]) -> Any:
        status, body = _http_get(f"{self.url}{path}?{urllib.parse.urlencode(params)}")
        try:
            payload = json.loads(body)
        except ValueError:
            raise PeerError(f"{path} answered {status} with non-JSON: {body[:200]!r}") from None
        if status != 200 or payload.get("status") != "success":
            raise PeerError(f"{path} {params} answered {status}: {payload}")
        return payload["data"]

    def query(self, promql: str) -> list:
        """Instant query (``/api/v1/query``); the ``result`` list of the vector/matrix."""
        return self._api("/api/v1/query", {"query": promql})["result"]

    def exemplars(self, promql: str, start: float, end: float) -> list:
        """``/api/v1/query_exemplars`` between two Unix times: a list of
        ``{"seriesLabels": {...}, "exemplars": [{"labels", "value", "timestamp"}]}``."""
        return self._api("/api/v1/query_exemplars",
                         {"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}"})

    def targets(self) -> list:
        """The active scrape targets with their health and last error, for diagnostics."""
        return self._api("/api/v1/targets", {})["activeTargets"]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextlib.contextmanager
def running_prometheus(scrape_targets: list[str], tmp_path: Path, scrape_interval: str = "1s",
                       start_timeout: float = 30.0) -> Iterator[RunningPrometheus]:
    """Run Prometheus scraping ``scrape_targets`` ("host:port", path /metrics).

    Files go to ``tmp_path/prometheus/``. Exemplar storage is on, so ``exemplars()`` sees
    what targets expose in OpenMetrics. Prometheus applies its targets about 5s after it
    is ready, so poll with eventually() and a timeout well above that.
    """
    workdir = tmp_path / "prometheus"
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "prometheus.yml"
    config_path.write_text(_prometheus_config(scrape_targets, scrape_interval))
    log_path = workdir / "prometheus.log"
    port = free_port()
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            ["prometheus",
             f"--config.file={config_path}",
             f"--storage.tsdb.path={workdir / 'data'}",
             f"--web.listen-address={HOST}:{port}",
             "--enable-feature=exemplar-storage"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=workdir,
        )
    prometheus = RunningPrometheus(url=f"http://{HOST}:{port}", process=process,
                                   config_path=config_path, log_path=log_path)
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            if process.poll() is not None:
                raise PeerError(f"prometheus exited with {process.returncode} while starting; "
                                f"log {log_path}:\n{_tail(log_path)}")
            try:
                if _http_get(f"{prometheus.url}/-/ready", timeout=1.0)[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() >= deadline:
                raise PeerError(f"prometheus was not ready within {start_timeout}s; "
                                f"log {log_path}:\n{_tail(log_path)}")
            time.sleep(0.1)
        yield prometheus
    finally:
        _stop_process(process, timeout=10.0)
