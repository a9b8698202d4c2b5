"""TLS, mTLS and the bearer-token check, for both receivers.

The token is compared in constant time (``hmac.compare_digest``) so its value cannot be
learnt from response timing. A missing or wrong token is UNAUTHENTICATED / 401: permanent,
the sender must not retry it.
"""
from __future__ import annotations

import hmac
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
from aiohttp import web

from faultgate_stream.model.errors import InputError
from faultgate_stream.receive.config import ServerTLS, token_file_problem


def token_of(config: Any, section: str = "receive") -> str:
    """The token to require ("" = none). A token file that is unreadable or blank is an
    error, never "no token": a failed secret mount must not turn authentication off."""
    if config.bearer_token_file:
        problem = token_file_problem(config.bearer_token_file)
        if problem:
            raise InputError(f"{section}.bearer_token_file: {problem}")
        return Path(config.bearer_token_file).read_text(encoding="utf-8").strip()
    return config.bearer_token


def _read(path: str, key: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise InputError(f"receive.tls.{key}: cannot read {path} ({e.strerror or e})") from None


def grpc_credentials(tls: ServerTLS) -> grpc.ServerCredentials | None:
    if not tls.enabled:
        return None
    ca = _read(tls.client_ca_file, "client_ca_file") if tls.client_ca_file else None
    return grpc.ssl_server_credentials([(_read(tls.key_file, "key_file"), _read(tls.cert_file, "cert_file"))],
                                       root_certificates=ca, require_client_auth=ca is not None)


def ssl_context(tls: ServerTLS, section: str = "receive") -> ssl.SSLContext | None:
    if not tls.enabled:
        return None
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        ctx.load_cert_chain(tls.cert_file, tls.key_file)
        if tls.client_ca_file:
            ctx.load_verify_locations(tls.client_ca_file)
            ctx.verify_mode = ssl.CERT_REQUIRED
    except (OSError, ssl.SSLError) as e:
        raise InputError(f"{section}.tls: cannot load certificates ({e})") from None
    return ctx


def _authorized(header: str | None, token: str) -> bool:
    if not header or not header.lower().startswith("bearer "):
        return False
    return hmac.compare_digest(header[7:].strip().encode(), token.encode())


class BearerTokenInterceptor(grpc.ServerInterceptor):
    def __init__(self, token: str) -> None:
        self._token = token

        def deny(requests: Any, context: grpc.ServicerContext) -> Any:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")

        # request-streaming, so a call without the token is refused before its message
        # is read: an unauthenticated sender never holds a worker waiting for it
        self._deny = grpc.stream_unary_rpc_method_handler(deny)

    def intercept_service(self, continuation: Callable[[Any], Any], details: grpc.HandlerCallDetails) -> Any:
        header = dict(details.invocation_metadata or ()).get("authorization")
        return continuation(details) if _authorized(header, self._token) else self._deny


def bearer_middleware(token: str, open_paths: frozenset[str] = frozenset()) -> Callable[..., Awaitable[web.StreamResponse]]:
    """Requires the token on every path but ``open_paths``."""
    @web.middleware
    async def check(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
        if request.path not in open_paths and not _authorized(request.headers.get("Authorization"), token):
            return web.Response(status=401, text="missing or invalid bearer token",
                                headers={"WWW-Authenticate": "Bearer"})
        return await handler(request)

    return check
