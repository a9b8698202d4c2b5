"""OTLP/HTTP ``POST /v1/traces`` (and ``POST /v1/logs`` for GenAI content in log events):
protobuf or JSON on the same port, gzip, answered in the request's content type (the OTLP
spec). Errors carry a ``google.rpc.Status`` body.
"""
from __future__ import annotations

from aiohttp import web
from google.protobuf import json_format
from google.protobuf.message import Message

from faultgate_stream.model.consumers import ContentConsumer, SpanConsumer
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.receive import decode
from faultgate_stream.receive.grpc_server import logs_partial_success, partial_success, status_of
from faultgate_stream.receive.outcome import Refusal
from faultgate_stream.receive.take import refuse, take, take_logs
from faultgate_stream.receive.security import bearer_middleware
from faultgate_stream.receive.telemetry import LogsTelemetry, ReceiverTelemetry

PROTOBUF = "application/x-protobuf"
JSON = "application/json"


def _encode(msg: Message, content_type: str) -> bytes:
    if content_type == JSON:
        return json_format.MessageToJson(msg, indent=None).encode()
    return msg.SerializeToString()


class TracesHandler:
    def __init__(self, consumer: SpanConsumer, telemetry: Telemetry, max_request_bytes: int) -> None:
        self._next = consumer
        self._t = ReceiverTelemetry(telemetry, "http")
        self._limit = max_request_bytes

    async def __call__(self, request: web.Request) -> web.Response:
        content_type = request.content_type
        if content_type not in (PROTOBUF, JSON):
            self._t.rejected_request("unsupported_media_type")
            return web.Response(status=415, text=f"unsupported content type {content_type!r}; "
                                                 f"send {PROTOBUF} or {JSON}")
        try:
            body = await _read(request, self._limit)
        except decode.PayloadTooLarge as e:
            return _refusal(refuse(e, self._t), content_type)
        parse = decode.json_body if content_type == JSON else decode.protobuf
        decoded, refusal = take(lambda: parse(body), self._next, self._t)
        if refusal is not None:
            return _refusal(refusal, content_type)
        return web.Response(status=200, body=_encode(partial_success(decoded), content_type), content_type=content_type)


class LogsHandler:
    """``/v1/logs``: the traces handler's rules, for an ``ExportLogsServiceRequest``."""

    def __init__(self, consumer: ContentConsumer, telemetry: Telemetry, max_request_bytes: int) -> None:
        self._next = consumer
        self._t = LogsTelemetry(telemetry, "http")
        self._limit = max_request_bytes

    async def __call__(self, request: web.Request) -> web.Response:
        content_type = request.content_type
        if content_type not in (PROTOBUF, JSON):
            self._t.rejected_request("unsupported_media_type")
            return web.Response(status=415, text=f"unsupported content type {content_type!r}; "
                                                 f"send {PROTOBUF} or {JSON}")
        try:
            body = await _read(request, self._limit)
        except decode.PayloadTooLarge as e:
            return _refusal(refuse(e, self._t), content_type)
        parse = decode.logs_json if content_type == JSON else decode.logs_protobuf
        decoded, refusal = take_logs(lambda: parse(body), self._next, self._t)
        if refusal is not None:
            return _refusal(refusal, content_type)
        return web.Response(status=200, body=_encode(logs_partial_success(decoded), content_type),
                            content_type=content_type)


def _refusal(refusal: Refusal, content_type: str) -> web.Response:
    headers = {}
    if refusal.retry_after_s is not None:
        headers["Retry-After"] = str(max(1, round(refusal.retry_after_s)))
    return web.Response(status=refusal.http_status, body=_encode(status_of(refusal), content_type),
                        content_type=content_type, headers=headers)


async def _read(request: web.Request, limit: int) -> bytes:
    """The body, inflated: aiohttp decompresses ``Content-Encoding: gzip`` itself while it
    reads, and stops at ``client_max_size`` counted on the inflated bytes, so the limit
    holds after decompression and a small gzip bomb cannot fill memory."""
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise decode.PayloadTooLarge(f"request is over the {limit}-byte limit (after decompression)") from None


def app(consumer: SpanConsumer, telemetry: Telemetry, max_request_bytes: int, bearer_token: str = "",
        contents: ContentConsumer | None = None) -> web.Application:
    # client_max_size counts the inflated body: see _read
    middlewares = [bearer_middleware(bearer_token)] if bearer_token else []
    application = web.Application(client_max_size=max_request_bytes, middlewares=middlewares)
    application.router.add_post("/v1/traces", TracesHandler(consumer, telemetry, max_request_bytes).__call__)
    if contents is not None:
        application.router.add_post("/v1/logs", LogsHandler(contents, telemetry, max_request_bytes).__call__)
    return application
