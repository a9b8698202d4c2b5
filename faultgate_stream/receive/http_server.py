"""OTLP/HTTP ``POST /v1/traces`` (and ``POST /v1/logs`` for GenAI content in log events):
protobuf or JSON on the same port, gzip, answered in the request's content type (the OTLP
spec). Errors carry a ``google.rpc.Status`` body.
"""
from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod

from aiohttp import web
from google.protobuf import json_format
from google.protobuf.message import Message

from faultgate_stream.model.consumers import ContentConsumer, SpanConsumer
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.receive import decode
from faultgate_stream.model.errors import InputError
from faultgate_stream.receive.config import DEFAULT_REQUEST_TIMEOUT
from faultgate_stream.receive.grpc_server import logs_partial_success, partial_success, status_of
from faultgate_stream.receive.inflate import ENCODINGS, inflate
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


class _OtlpHandler(ABC):
    """One OTLP/HTTP export path: content type and encoding checked, the body read within
    the request timeout and inflated here (the limit counts inflated bytes), then decoded
    and handed on by ``take`` or ``take_logs`` (receive/take.py), which classify the outcome."""

    def __init__(self, telemetry: ReceiverTelemetry | LogsTelemetry, max_request_bytes: int,
                 request_timeout: float) -> None:
        self._t = telemetry
        self._limit = max_request_bytes
        self._timeout = request_timeout

    @abstractmethod
    def _handle(self, body: bytes, content_type: str) -> web.Response:
        """Decode ``body`` and hand it on; the answer in ``content_type``."""

    async def __call__(self, request: web.Request) -> web.Response:
        content_type = request.content_type
        if content_type not in (PROTOBUF, JSON):
            self._t.rejected_request("unsupported_media_type")
            return web.Response(status=415, text=f"unsupported content type {content_type!r}; "
                                                 f"send {PROTOBUF} or {JSON}")
        encoding = request.headers.get("Content-Encoding", "")
        if encoding.strip().lower() not in ENCODINGS:
            self._t.rejected_request("unsupported_encoding")
            return web.Response(status=415, text=f"unsupported Content-Encoding {encoding!r}; "
                                                 f"send gzip, deflate or identity")
        try:
            async with asyncio.timeout(self._timeout):
                raw = await _read(request, self._limit)
            body = inflate(raw, encoding, self._limit)
        except TimeoutError:
            # a body trickling in holds a connection and memory; the sender may try again
            self._t.rejected_request("request_timeout")
            return web.Response(status=408, text=f"the request body did not arrive within {self._timeout:g}s",
                                headers={"Connection": "close"})
        except InputError as e:  # over the limit, or a body that does not inflate
            return _refusal(refuse(e, self._t), content_type)
        return self._handle(body, content_type)


class TracesHandler(_OtlpHandler):
    def __init__(self, consumer: SpanConsumer, telemetry: Telemetry, max_request_bytes: int,
                 request_timeout: float = DEFAULT_REQUEST_TIMEOUT, reader: decode.Reader | None = None) -> None:
        super().__init__(ReceiverTelemetry(telemetry, "http"), max_request_bytes, request_timeout)
        self._next = consumer
        self._reader = reader or decode.Reader()

    def _handle(self, body: bytes, content_type: str) -> web.Response:
        parse = self._reader.json_body if content_type == JSON else self._reader.protobuf
        decoded, refusal = take(lambda: parse(body), self._next, self._t)
        if refusal is not None:
            return _refusal(refusal, content_type)
        return web.Response(status=200, body=_encode(partial_success(decoded), content_type), content_type=content_type)


class LogsHandler(_OtlpHandler):
    """``/v1/logs``: the traces handler's rules, for an ``ExportLogsServiceRequest``."""

    def __init__(self, consumer: ContentConsumer, telemetry: Telemetry, max_request_bytes: int,
                 request_timeout: float = DEFAULT_REQUEST_TIMEOUT) -> None:
        super().__init__(LogsTelemetry(telemetry, "http"), max_request_bytes, request_timeout)
        self._next = consumer

    def _handle(self, body: bytes, content_type: str) -> web.Response:
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
    """The body as sent: the host runs this app with aiohttp's own decompression off
    (``HttpHost.add(..., raw_body=True)``) and ``inflate`` undoes the encoding, counting
    the limit on the inflated bytes. ``client_max_size`` stops a compressed body already
    over the limit while it is read."""
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise decode.PayloadTooLarge(f"request is over the {limit}-byte limit") from None


def app(consumer: SpanConsumer, telemetry: Telemetry, max_request_bytes: int, bearer_token: str = "",
        contents: ContentConsumer | None = None,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT, reader: decode.Reader | None = None) -> web.Application:
    # host it with raw_body=True: inflating is ours (receive/inflate.py)
    middlewares = [bearer_middleware(bearer_token)] if bearer_token else []
    application = web.Application(client_max_size=max_request_bytes, middlewares=middlewares)
    application.router.add_post("/v1/traces",
                                TracesHandler(consumer, telemetry, max_request_bytes, request_timeout, reader).__call__)
    if contents is not None:
        application.router.add_post("/v1/logs",
                                    LogsHandler(contents, telemetry, max_request_bytes, request_timeout).__call__)
    return application
