"""One export request to the downstream, with the downstream's statuses mapped back.

The retry table is the OTLP spec's (the collector's ``otlpexporter`` ``shouldRetry``):
CANCELLED, DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE, UNAVAILABLE and DATA_LOSS are retried;
RESOURCE_EXHAUSTED only when the server sent ``RetryInfo`` (without it the same request
would be refused again: it is too large, ``too_large``, which the exporter answers by
splitting it); everything else is permanent. Over HTTP 429, 502, 503 and 504 are retried,
and 413 is ``too_large``. A server's ``RetryInfo`` / ``Retry-After`` delay is honoured
before the exponential backoff resumes. Retrying is tenacity's.
"""
from __future__ import annotations

import gzip
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import grpc
import tenacity
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from faultgate_stream.export.spans.config import ClientTLS, SpansExportConfig

TRACES_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
LOGS_METHOD = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
RETRYABLE_GRPC = frozenset({grpc.StatusCode.CANCELLED, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.ABORTED,
                            grpc.StatusCode.OUT_OF_RANGE, grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DATA_LOSS})
RETRYABLE_HTTP = frozenset({429, 502, 503, 504})


class ExportError(Exception):
    def __init__(self, message: str, *, retryable: bool, reason: str, retry_after_s: float | None = None,
                 too_large: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.reason = reason
        self.retry_after_s = retry_after_s
        self.too_large = too_large  # the request is over what the downstream takes: send it in parts


@dataclass(frozen=True)
class Answer:
    rejected: int      # the downstream's partial success: spans or log records it refused
    message: str


def _grpc_error(e: grpc.RpcError) -> ExportError:
    code = e.code()
    delay = None
    status = rpc_status.from_call(e)  # type: ignore[arg-type]
    for detail in status.details if status is not None else ():
        info = error_details_pb2.RetryInfo()
        if detail.Unpack(info):
            delay = info.retry_delay.ToNanoseconds() / 1e9
    retryable = code in RETRYABLE_GRPC or (code == grpc.StatusCode.RESOURCE_EXHAUSTED and delay is not None)
    return ExportError(f"{code.name}: {e.details()}", retryable=retryable, reason=code.name.lower(),
                       retry_after_s=delay, too_large=code == grpc.StatusCode.RESOURCE_EXHAUSTED and delay is None)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    if value.strip().isdigit():
        return float(value)
    try:
        import time

        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _credentials(tls: ClientTLS) -> grpc.ChannelCredentials:
    def read(path: str) -> bytes | None:
        return Path(path).read_bytes() if path else None

    return grpc.ssl_channel_credentials(root_certificates=read(tls.ca_file), private_key=read(tls.key_file),
                                        certificate_chain=read(tls.cert_file))


class GrpcSender:
    def __init__(self, endpoint: str, config: SpansExportConfig) -> None:
        options: list[tuple[str, Any]] = [
            # the exporter keeps requests under max_request_bytes; the channel's own bound is
            # off, so that a request over it is the downstream's to refuse, not a local error
            ("grpc.max_send_message_length", -1),
            # gRPC's own reconnect backoff grows to 120 s while the downstream is away: a
            # downstream back after a 20 s outage was measured reconnected 7.5 s later, every
            # retry meanwhile failing at once while the queue filled and the receiver refused.
            # Its reconnects follow the exporter's own retry schedule instead.
            ("grpc.initial_reconnect_backoff_ms", int(min(1.0, config.retry_initial_interval) * 1000)),
            ("grpc.max_reconnect_backoff_ms", int(config.retry_max_interval * 1000)),
        ]
        if config.tls.server_name:
            options.append(("grpc.ssl_target_name_override", config.tls.server_name))
        target = endpoint.removeprefix("http://").removeprefix("https://")
        self._channel = (grpc.insecure_channel(target, options=options) if config.tls.insecure
                         else grpc.secure_channel(target, _credentials(config.tls), options=options))
        self._compression = grpc.Compression.Gzip if config.compression == "gzip" else grpc.Compression.NoCompression
        self._metadata = tuple((k.lower(), v) for k, v in config.headers.items())
        self._timeout = config.timeout
        self._calls = {m: self._channel.unary_unary(m) for m in (TRACES_METHOD, LOGS_METHOD)}

    def send(self, kind: str, payload: bytes) -> Answer:
        method = TRACES_METHOD if kind == "traces" else LOGS_METHOD
        try:
            raw = self._calls[method](payload, timeout=self._timeout, metadata=self._metadata,
                                      compression=self._compression)
        except grpc.RpcError as e:
            raise _grpc_error(e) from None
        return _answer(kind, raw)

    def close(self) -> None:
        self._channel.close()


class HttpSender:
    def __init__(self, endpoint: str, config: SpansExportConfig) -> None:
        import urllib3

        base = endpoint if "://" in endpoint else f"http://{endpoint}"
        self._urls = {"traces": base.rstrip("/") + "/v1/traces", "logs": base.rstrip("/") + "/v1/logs"}
        kw: dict[str, Any] = {"retries": False, "timeout": config.timeout}
        if not config.tls.insecure:
            kw.update(cert_reqs="CERT_REQUIRED", ca_certs=config.tls.ca_file or None,
                      cert_file=config.tls.cert_file or None, key_file=config.tls.key_file or None)
            if config.tls.server_name:
                kw["server_hostname"] = config.tls.server_name
        self._http = urllib3.PoolManager(**kw)
        self._gzip = config.compression == "gzip"
        self._headers = {"Content-Type": "application/x-protobuf", **config.headers}
        if self._gzip:
            self._headers["Content-Encoding"] = "gzip"

    def send(self, kind: str, payload: bytes) -> Answer:
        import urllib3

        body = gzip.compress(payload) if self._gzip else payload
        try:
            r = self._http.request("POST", self._urls[kind], body=body, headers=self._headers)
        except urllib3.exceptions.HTTPError as e:
            raise ExportError(f"{type(e).__name__}: {e}", retryable=True, reason="connection") from None
        if r.status != 200:
            raise ExportError(f"HTTP {r.status}: {r.data[:200]!r}", retryable=r.status in RETRYABLE_HTTP,
                              reason="http_5xx" if r.status >= 500 else "http_4xx",
                              retry_after_s=_retry_after(r.headers.get("Retry-After")), too_large=r.status == 413)
        return _answer(kind, r.data)

    def close(self) -> None:
        self._http.clear()


def _answer(kind: str, raw: bytes) -> Answer:
    if kind == "traces":
        t = ExportTraceServiceResponse.FromString(raw or b"")
        return Answer(t.partial_success.rejected_spans, t.partial_success.error_message)
    lg = ExportLogsServiceResponse.FromString(raw or b"")
    return Answer(lg.partial_success.rejected_log_records, lg.partial_success.error_message)


def sender_for(endpoint: str, config: SpansExportConfig):
    return HttpSender(endpoint, config) if config.protocol == "http" else GrpcSender(endpoint, config)


class _WaitRetryInfo(tenacity.wait.wait_base):
    """The server's requested delay when it sent one, else exponential backoff."""

    def __init__(self, config: SpansExportConfig) -> None:
        self._backoff = tenacity.wait_exponential(multiplier=config.retry_initial_interval, exp_base=1.5,
                                                  max=config.retry_max_interval)

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        if isinstance(exc, ExportError) and exc.retry_after_s is not None:
            return exc.retry_after_s
        return self._backoff(retry_state)


def retrying(config: SpansExportConfig, stop_event: Any = None) -> tenacity.Retrying:
    """Retries an ``ExportError`` that is retryable until ``retry_max_elapsed`` (0: forever)
    or until ``stop_event`` is set (shutdown past its grace)."""
    stops = [tenacity.stop_when_event_set(stop_event)] if stop_event is not None else []
    if config.retry_max_elapsed > 0:
        stops.append(tenacity.stop_after_delay(config.retry_max_elapsed))
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception(lambda e: isinstance(e, ExportError) and e.retryable),
        wait=_WaitRetryInfo(config),
        stop=tenacity.stop_any(*stops) if stops else tenacity.stop_never,
        reraise=True,
        sleep=(lambda s: stop_event.wait(s)) if stop_event is not None else tenacity.nap.sleep,
    )
