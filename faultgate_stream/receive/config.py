"""Receiver settings."""
from __future__ import annotations

from dataclasses import dataclass, field

from faultgate_stream.model.settings import BYTES
from faultgate_stream.receive.kafka.config import KafkaConfig

# The OTLP spec recommends accepting 64 MiB (after decompression); grpc's own default of
# 4 MiB would refuse a large batch from a collector's exporter permanently.
DEFAULT_MAX_REQUEST_BYTES = 64 * 1024 * 1024
# Python's GIL makes more workers useless for parsing (measured in python-otlp-performance.md:
# pool 1, 4 and 16 within noise); four keep slow clients from blocking each other.
DEFAULT_GRPC_WORKERS = 4


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
        if self.bearer_token and self.bearer_token_file:
            problems.append("bearer_token and bearer_token_file: set one, not both")
        return problems
