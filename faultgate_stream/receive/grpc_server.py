"""OTLP/gRPC ``TraceService/Export``, and ``LogsService/Export`` for GenAI content in log
events (same port, same status rules: partial success names rejected log records).

A sync ``grpc.server`` with a raw-bytes handler: measured fastest of the Python shapes
(python-otlp-performance.md: ~1.0 M spans/s null receiver vs 0.8 M for aio), and it lets
us parse once with upb. grpc enforces ``max_receive_message_length`` after decompression
and answers RESOURCE_EXHAUSTED itself, which the OTLP spec makes non-retryable.
"""
from __future__ import annotations

from concurrent import futures
from typing import Any

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsPartialSuccess, ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess, ExportTraceServiceResponse,
)

from faultgate_stream.model.consumers import ContentConsumer, SpanConsumer
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.read.otlp_logs import DecodedLogs
from faultgate_stream.read.otlp_proto import Decoded
from faultgate_stream.receive import decode
from faultgate_stream.receive.arrival import ArrivalDeadline, ArrivalWatchdog
from faultgate_stream.receive.config import DEFAULT_GRPC_MAX_STREAMS, DEFAULT_REQUEST_TIMEOUT
from faultgate_stream.receive.outcome import Refusal
from faultgate_stream.receive.take import take, take_logs
from faultgate_stream.receive.telemetry import LogsTelemetry, ReceiverTelemetry

SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"
_EMPTY = ExportTraceServiceResponse().SerializeToString()
_EMPTY_LOGS = ExportLogsServiceResponse().SerializeToString()


def partial_success(decoded: Decoded) -> ExportTraceServiceResponse:
    if not decoded.rejected:
        return ExportTraceServiceResponse()
    return ExportTraceServiceResponse(partial_success=ExportTracePartialSuccess(
        rejected_spans=decoded.rejected, error_message=decoded.first_problem))


def logs_partial_success(decoded: DecodedLogs) -> ExportLogsServiceResponse:
    if not decoded.rejected:
        return ExportLogsServiceResponse()
    return ExportLogsServiceResponse(partial_success=ExportLogsPartialSuccess(
        rejected_log_records=decoded.rejected, error_message=decoded.first_problem))


def status_of(refusal: Refusal) -> status_pb2.Status:
    """A ``google.rpc.Status``; a retryable refusal carries ``RetryInfo`` so clients wait."""
    st = status_pb2.Status(code=refusal.grpc_code.value[0], message=refusal.message)
    if refusal.retry_after_s is not None:
        delay = duration_pb2.Duration()
        delay.FromNanoseconds(int(refusal.retry_after_s * 1e9))
        detail = any_pb2.Any()
        detail.Pack(error_details_pb2.RetryInfo(retry_delay=delay))
        st.details.append(detail)
    return st


class TraceExport:
    def __init__(self, consumer: SpanConsumer, telemetry: Telemetry, reader: decode.Reader) -> None:
        self._next = consumer
        self._t = ReceiverTelemetry(telemetry, "grpc")
        self._reader = reader

    def __call__(self, body: bytes, context: grpc.ServicerContext) -> bytes:
        decoded, refusal = take(lambda: self._reader.protobuf(body), self._next, self._t)
        if refusal is not None:
            context.abort_with_status(rpc_status.to_status(status_of(refusal)))
        assert decoded is not None
        return partial_success(decoded).SerializeToString() if decoded.rejected else _EMPTY


class LogsExport:
    def __init__(self, consumer: ContentConsumer, telemetry: Telemetry) -> None:
        self._next = consumer
        self._t = LogsTelemetry(telemetry, "grpc")

    def __call__(self, body: bytes, context: grpc.ServicerContext) -> bytes:
        decoded, refusal = take_logs(lambda: decode.logs_protobuf(body), self._next, self._t)
        if refusal is not None:
            context.abort_with_status(rpc_status.to_status(status_of(refusal)))
        assert decoded is not None
        return logs_partial_success(decoded).SerializeToString() if decoded.rejected else _EMPTY_LOGS


class GrpcReceiver:
    def __init__(self, endpoint: str, consumer: SpanConsumer, telemetry: Telemetry, *, max_request_bytes: int,
                 workers: int, credentials: Any = None, interceptors: tuple[Any, ...] = (),
                 contents: ContentConsumer | None = None, request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
                 max_streams_per_connection: int = DEFAULT_GRPC_MAX_STREAMS,
                 reader: decode.Reader | None = None) -> None:
        self.endpoint = endpoint
        slow = telemetry["faultgate_receiver_rejected_requests"].labels("grpc", "request_timeout")
        self._watchdog = ArrivalWatchdog(request_timeout, slow.inc)
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="otlp-grpc"),
            # first: the handlers the others return are bounded too (see receive/arrival.py)
            interceptors=(ArrivalDeadline(self._watchdog), *interceptors),
            options=[("grpc.max_receive_message_length", max_request_bytes),
                     ("grpc.max_concurrent_streams", max_streams_per_connection),
                     ("grpc.so_reuseport", 0),  # one process per port: SO_REUSEPORT would split traces
                     # An answered call stops counting against max_concurrent_streams when its
                     # stream closes, not when Python frees the call: freeing it takes gRPC's
                     # poller thread, which takes the GIL, so while a scan or a collection held
                     # the GIL a sender's next calls were refused (REFUSED_STREAM) before any
                     # handler of ours could count them (tests/receive/test_slow_grpc_senders.py).
                     ("grpc.http.overload_protection", 0)],
        )
        handler = grpc.unary_unary_rpc_method_handler(TraceExport(consumer, telemetry, reader or decode.Reader()),
                                                      request_deserializer=None, response_serializer=None)
        self._server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {"Export": handler}),))
        if contents is not None:
            logs = grpc.unary_unary_rpc_method_handler(LogsExport(contents, telemetry),
                                                       request_deserializer=None, response_serializer=None)
            self._server.add_generic_rpc_handlers(
                (grpc.method_handlers_generic_handler(LOGS_SERVICE, {"Export": logs}),))
        if credentials is None:
            self.port = self._server.add_insecure_port(endpoint)
        else:
            self.port = self._server.add_secure_port(endpoint, credentials)
        if not self.port:
            raise OSError(f"cannot listen on {endpoint}")

    def add_generic_rpc_handlers(self, handlers: tuple[Any, ...]) -> None:
        """More services on the same port (the verdict stream)."""
        self._server.add_generic_rpc_handlers(handlers)

    def start(self) -> None:
        self._server.start()

    def stop(self, grace: float | None = None) -> None:
        self._server.stop(grace).wait()
        self._watchdog.stop()

