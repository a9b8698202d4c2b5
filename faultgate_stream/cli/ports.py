"""The service's listening endpoints, by config key, and whether each can be bound now.

``serve`` checks them before it starts, so a taken port is one line naming the port and
the key that set it instead of a traceback from whichever server binds first; ``demo``
swaps a taken one for a free port. The check binds without SO_REUSEPORT, as the receivers
do, so it fails exactly where they would.
"""
from __future__ import annotations

import socket

from faultgate_stream.config import ServiceConfig

# (config key, environment override) of every endpoint the service listens on
KEYS = (("receive.grpc_endpoint", "FAULTGATE_STREAM__RECEIVE__GRPC_ENDPOINT"),
        ("receive.http_endpoint", "FAULTGATE_STREAM__RECEIVE__HTTP_ENDPOINT"),
        ("metrics.endpoint", "FAULTGATE_STREAM__METRICS__ENDPOINT"))


def endpoints(config: ServiceConfig) -> dict[str, str]:
    """Config key -> endpoint, for the endpoints that are enabled (not "")."""
    values = {"receive.grpc_endpoint": config.receive.grpc_endpoint,
              "receive.http_endpoint": config.receive.http_endpoint,
              "metrics.endpoint": config.metrics.endpoint}
    return {k: v for k, v in values.items() if v}


def split(endpoint: str) -> tuple[str, int]:
    host, _, port = endpoint.rpartition(":")
    return host.strip("[]") or "0.0.0.0", int(port)


def bind_error(endpoint: str) -> str | None:
    """Why ``endpoint`` cannot be bound right now (``None`` when it can, or when it names
    port 0, which always can)."""
    try:
        host, port = split(endpoint)
    except ValueError:
        return None  # malformed: the server's own parser gives the better message
    if port == 0:
        return None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            # as the servers do: a port left in TIME_WAIT by a stopped instance is free
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
    except OSError as e:
        return e.strerror or str(e)
    return None


def busy(config: ServiceConfig) -> list[str]:
    """One line per endpoint that cannot be bound, naming the port and its config key."""
    env = dict(KEYS)
    out = []
    for key, endpoint in endpoints(config).items():
        problem = bind_error(endpoint)
        if problem:
            port = endpoint.rpartition(":")[2]
            out.append(f"port {port} ({key}: {endpoint!r}) is not free: {problem}; set {key} in the config "
                       f"file or {env[key]}")
    return out
