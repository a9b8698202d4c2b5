"""Downstream export settings; the defaults are the collector's exporterhelper's."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from faultgate_stream.model.settings import BYTES, DURATION

# The downstream collector's gRPC receiver refuses messages over 4 MiB by default
# (max_recv_msg_size_mib: 4, so 4,194,304 bytes of the uncompressed message), and that
# refusal is permanent (grafana/agent #3132). No request is larger than max_request_bytes,
# framing included; the 64 KiB under the limit are for what a client adds that we do not
# count. A span larger than it on its own is rejected when it arrives (the receivers'
# partial success names the limit), never acknowledged and dropped here (issue 42).
DEFAULT_MAX_REQUEST_BYTES = 4 * 1024 * 1024 - 64 * 1024
# Room kept in a request for the verdict written onto a run's root (attributes and one
# evaluation event per check, reasons masked): a span is taken only when it fits
# max_request_bytes with this much to spare.
VERDICT_ROOM_BYTES = 64 * 1024
# Batches grow to this much before they are sent: under max_request_bytes, so that a batch
# taken whole stays a request the downstream takes.
DEFAULT_MAX_BATCH_BYTES = 3 * 1024 * 1024
DEFAULT_MAX_BATCH_SPANS = 8192
# Spans accepted but not yet exported (queued, being sent, or roots waiting for their
# verdict). At the bound the receivers refuse retryably, so the upstream collector's own
# queue holds the data instead of us dropping it.
DEFAULT_QUEUE_SPANS = 200_000
# How long a worker waits for a batch to fill once something is queued: the collector's
# exporterhelper batcher flushes after 200ms. Verdicts are not delayed by it, only the
# spans' arrival downstream; one call per 200ms per worker took a call's fixed cost off
# almost every span (bench/README.md).
DEFAULT_LINGER_S = 0.2


@dataclass(frozen=True, kw_only=True)
class ClientTLS:
    insecure: bool = True        # plaintext; set false to use TLS
    ca_file: str = ""            # CA bundle to verify the server ("" = system roots)
    cert_file: str = ""          # client certificate, for mTLS
    key_file: str = ""
    server_name: str = ""        # override the name checked in the server certificate

    def validate(self) -> list[str]:
        if bool(self.cert_file) != bool(self.key_file):
            return ["cert_file and key_file: set both or neither"]
        return []


@dataclass(frozen=True, kw_only=True)
class SpansExportConfig:
    endpoint: str = ""                              # "" disables span export
    logs_endpoint: str = ""                         # OTLP logs for evaluation events; "" = none
    protocol: Literal["grpc", "http"] = "grpc"
    mode: Literal["passthrough", "verdict_only"] = "passthrough"
    strip_content: bool = False                     # drop messages, tool arguments and results
    compression: Literal["gzip", "none"] = "gzip"
    timeout: float = field(default=5.0, metadata=DURATION)
    queue_spans: int = DEFAULT_QUEUE_SPANS
    max_batch_spans: int = DEFAULT_MAX_BATCH_SPANS
    max_batch_bytes: int = field(default=DEFAULT_MAX_BATCH_BYTES, metadata=BYTES)
    max_request_bytes: int = field(default=DEFAULT_MAX_REQUEST_BYTES, metadata=BYTES)  # the downstream's limit
    linger: float = field(default=DEFAULT_LINGER_S, metadata=DURATION)  # 0: send what is queued at once
    retry_initial_interval: float = field(default=5.0, metadata=DURATION)
    retry_max_interval: float = field(default=30.0, metadata=DURATION)
    retry_max_elapsed: float = field(default=300.0, metadata=DURATION)  # 0: retry forever
    workers: int = 2
    headers: dict[str, str] = field(default_factory=dict)
    tls: ClientTLS = ClientTLS()

    @property
    def max_span_bytes(self) -> int | None:
        """The bytes a received span may take in a request, with its resource and scope
        (None when span export is off: nothing is sent on)."""
        return self.max_request_bytes - VERDICT_ROOM_BYTES if self.endpoint else None

    def validate(self) -> list[str]:
        problems = []
        for name in ("queue_spans", "max_batch_spans", "workers"):
            if getattr(self, name) < 1:
                problems.append(f"{name}: must be >= 1")
        if self.linger < 0:
            problems.append("linger: must be >= 0")
        if self.max_batch_bytes < 1024:
            problems.append("max_batch_bytes: must be at least 1KiB")
        if self.max_request_bytes < 2 * VERDICT_ROOM_BYTES:
            problems.append("max_request_bytes: must be at least 128KiB (a span and room for its verdict)")
        elif self.max_batch_bytes > self.max_request_bytes:
            problems.append("max_batch_bytes: must be at most max_request_bytes")
        if self.retry_initial_interval <= 0 or self.retry_max_interval < self.retry_initial_interval:
            problems.append("retry_max_interval: must be >= retry_initial_interval > 0")
        return problems
