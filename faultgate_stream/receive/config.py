"""Receiver settings."""
from __future__ import annotations

from dataclasses import dataclass, field

from faultgate_stream.model.settings import BYTES

# The OTLP spec recommends accepting 64 MiB (after decompression); grpc's own default of
# 4 MiB would refuse a large batch from a collector's exporter permanently.
DEFAULT_MAX_REQUEST_BYTES = 64 * 1024 * 1024
# Python's GIL makes more workers useless for parsing (measured in python-otlp-performance.md:
# pool 1, 4 and 16 within noise); four keep slow clients from blocking each other.
DEFAULT_GRPC_WORKERS = 4


@dataclass(frozen=True, kw_only=True)
class ReceiveConfig:
    grpc_endpoint: str = "0.0.0.0:4317"   # "" disables the gRPC receiver
    http_endpoint: str = "0.0.0.0:4318"   # "" disables the HTTP receiver
    max_request_bytes: int = field(default=DEFAULT_MAX_REQUEST_BYTES, metadata=BYTES)
    grpc_workers: int = DEFAULT_GRPC_WORKERS

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
        return problems
