"""A real Apache Kafka broker (KRaft, one node that is also its controller) and the
collector with the Kafka exporter, for tests/kafka.

``scripts/install_kafka.sh`` fetches the broker's jars from Maven Central and builds the
collector; nothing here installs or skips: a missing peer fails the test (PeerError).
The broker runs ``kafka.Kafka`` from those jars on free loopback ports, its storage
formatted by ``kafka.tools.StorageTool`` in the test's temporary directory.
"""
from __future__ import annotations

import base64
import contextlib
import functools
import os
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.peers import HOST, INSTALL_SCRIPT, PeerError, RunningCollector, _stop_process, _tail, free_port, \
    running_collector

INSTALL_KAFKA = INSTALL_SCRIPT.parent / "install_kafka.sh"
# A one-node cluster on a loaded 2-core machine: the JVM needs little heap, and C1 only
# (TieredStopAtLevel=1) starts it in about half the time.
JVM = ["-Xms128m", "-Xmx512m", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
START_TIMEOUT_S = 120.0


def _ask(flag: str) -> Path:
    result = subprocess.run(["bash", str(INSTALL_KAFKA), flag], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise PeerError(f"{INSTALL_KAFKA} {flag} failed: {result.stderr.strip()}")
    return Path(result.stdout.strip())


@functools.lru_cache(maxsize=1)
def kafka_libs() -> Path:
    libs = _ask("--print-path")
    if not (libs / ".complete").exists():
        raise PeerError(f"Kafka's jars are not at {libs}; run `bash scripts/install_kafka.sh` (setup.sh does)")
    return libs


@functools.lru_cache(maxsize=1)
def kafka_collector_binary() -> Path:
    binary = _ask("--collector-path")
    if not os.access(binary, os.X_OK):
        raise PeerError(f"the Kafka-exporter collector is not built at {binary}; run `bash scripts/install_kafka.sh`")
    return binary


@dataclass
class Broker:
    port: int
    log_path: Path

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    def create_topic(self, name: str, partitions: int) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
            future.result(timeout=30)


def _java(libs: Path, *args: str, log: Path) -> subprocess.Popen:
    with log.open("ab") as out:
        return subprocess.Popen(["java", *JVM, "-cp", f"{libs}/*", *args], stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT)


@contextlib.contextmanager
def running_broker(workdir: Path) -> Iterator[Broker]:
    libs = kafka_libs()
    workdir.mkdir(parents=True, exist_ok=True)
    port, controller = free_port(), free_port()
    props = workdir / "server.properties"
    props.write_text(f"""process.roles=broker,controller
node.id=1
controller.quorum.voters=1@{HOST}:{controller}
listeners=PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{controller}
advertised.listeners=PLAINTEXT://{HOST}:{port}
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs={workdir / 'data'}
num.partitions=4
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
# a group forms as soon as its first member joins, instead of 3 s later
group.initial.rebalance.delay.ms=0
""")
    log = workdir / "broker.log"
    # Kafka's Uuid form; like Kafka's own Uuid.randomUuid, never one that starts with "-",
    # which the storage tool's argument parser reads as an option (1 id in 64 did)
    cluster_id = "-"
    while cluster_id.startswith("-"):
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
    fmt = _java(libs, "kafka.tools.StorageTool", "format", "-t", cluster_id,
                "-c", str(props), log=log)
    if fmt.wait(timeout=120) != 0:
        raise PeerError(f"formatting Kafka's storage failed; log {log}:\n{_tail(log)}")
    proc = _java(libs, "kafka.Kafka", str(props), log=log)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise PeerError(f"the broker exited with {proc.returncode}; log {log}:\n{_tail(log)}")
            if "Kafka Server started" in log.read_text(errors="replace"):
                with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=1):
                    break
            if time.monotonic() > deadline:
                raise PeerError(f"the broker did not start within {START_TIMEOUT_S}s; log {log}:\n{_tail(log)}")
            time.sleep(0.3)
        yield Broker(port, log)
    finally:
        _stop_process(proc, 20)


@contextlib.contextmanager
def running_kafka_collector(config_yaml: str, workdir: Path) -> Iterator[RunningCollector]:
    """The v0.150.0 collector with the Kafka exporter, under ``workdir``."""
    with running_collector(config_yaml, workdir.parent, workdir.name, start_timeout=60.0,
                           binary=kafka_collector_binary()) as collector:
        yield collector
