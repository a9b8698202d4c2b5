"""Receiver settings."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from faultgate_stream.model.settings import BYTES, DURATION
from faultgate_stream.receive.kafka.config import KafkaConfig

# The OTLP spec recommends accepting 64 MiB (after decompression); grpc's own default of
# 4 MiB would refuse a large batch from a collector's exporter permanently.
DEFAULT_MAX_REQUEST_BYTES = 64 * 1024 * 1024
# Python's GIL makes more workers useless for parsing (measured in python-otlp-performance.md:
# pool 1, 4 and 16 within noise); four keep slow clients from blocking each other.
DEFAULT_GRPC_WORKERS = 4
# The time one request may take to arrive whole (gRPC: from its HEADERS to its message;
# HTTP: its body). A collector sends a batch in milliseconds and gives up after its own
# 5 s timeout; a sender slower than this holds a worker others need.
DEFAULT_REQUEST_TIMEOUT = 30.0
# Calls one gRPC connection may have open at once. A collector's exporter sends from 10
# consumers by default; the cap keeps one connection from taking every worker.
DEFAULT_GRPC_MAX_STREAMS = 16
# An HTTP connection that sends no request for this long is closed (the collector's
# confighttp default idle_timeout); it also bounds how long headers may take to arrive.
DEFAULT_HTTP_IDLE_TIMEOUT = 60.0
# Open HTTP connections past which a new one is answered 503 and closed: far below the
# process's file-descriptor limit, so idle sockets cannot take gRPC and /healthz down.
DEFAULT_HTTP_MAX_CONNECTIONS = 4096


@dataclass(frozen=True, kw_only=True)
class ServerTLS:
    cert_file: str = ""        # "" = plaintext
    key_file: str = ""
    client_ca_file: str = ""   # set: mTLS, a client certificate signed by this CA is required

    @property
    def enabled(self) -> bool:
        return bool(self.cert_file)

    def validate(self) -> list[str]:
        problems = []
        if bool(self.cert_file) != bool(self.key_file):
            problems.append("cert_file and key_file: set both or neither")
        if self.client_ca_file and not self.cert_file:
            problems.append("client_ca_file: mTLS needs cert_file and key_file too")
        return problems


@dataclass(frozen=True, kw_only=True)
class ReceiveConfig:
    grpc_endpoint: str = "0.0.0.0:4317"   # "" disables the gRPC receiver
    http_endpoint: str = "0.0.0.0:4318"   # "" disables the HTTP receiver
    max_request_bytes: int = field(default=DEFAULT_MAX_REQUEST_BYTES, metadata=BYTES)
    grpc_workers: int = DEFAULT_GRPC_WORKERS
    grpc_max_streams_per_connection: int = DEFAULT_GRPC_MAX_STREAMS
    request_timeout: float = field(default=DEFAULT_REQUEST_TIMEOUT, metadata=DURATION)
    http_idle_timeout: float = field(default=DEFAULT_HTTP_IDLE_TIMEOUT, metadata=DURATION)
    http_max_connections: int = DEFAULT_HTTP_MAX_CONNECTIONS
    tls: ServerTLS = ServerTLS()
    # Required "Authorization: Bearer <token>" (what the collector's bearertokenauth sends);
    # "" = no check. bearer_token_file is read at start, for secrets mounted as files.
    bearer_token: str = ""
    bearer_token_file: str = ""
    kafka: KafkaConfig = KafkaConfig()  # the durable source; off unless brokers are set

    def validate(self) -> list[str]:
        problems = []
        for name in ("grpc_endpoint", "http_endpoint"):
            v = getattr(self, name)
            if v and (":" not in v or not v.rsplit(":", 1)[1].isdigit()):
                problems.append(f"{name}: must be host:port, not {v!r}")
        if self.max_request_bytes < 1024:
            problems.append("max_request_bytes: must be at least 1KiB")
        if self.grpc_workers < 1:
            problems.append("grpc_workers: must be >= 1")
        for name in ("grpc_max_streams_per_connection", "http_max_connections"):
            if getattr(self, name) < 1:
                problems.append(f"{name}: must be >= 1")
        for name in ("request_timeout", "http_idle_timeout"):
            if not getattr(self, name) > 0:
                problems.append(f"{name}: must be a duration > 0")
        if self.bearer_token and not self.bearer_token.strip():
            problems.append("bearer_token: is blank; a blank token would turn authentication off")
        if self.bearer_token and self.bearer_token_file:
            problems.append("bearer_token and bearer_token_file: set one, not both")
        if self.bearer_token_file:
            # a blank or unreadable file must not read as "no token": that would turn
            # authentication off without a word
            problem = token_file_problem(self.bearer_token_file)
            if problem:
                problems.append(f"bearer_token_file: {problem}")
        return problems


def token_file_problem(path: str) -> str:
    """Why the token file cannot serve as a token ("" when it can)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        return f"cannot read {path} ({e.strerror or e})"
    except UnicodeDecodeError:
        return f"{path} is not UTF-8 text"
    if not text.strip():
        return f"{path} is empty; a blank token would turn authentication off"
    return ""
