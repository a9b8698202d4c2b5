"""Metrics and probes: on loopback unless the operator opens them, with TLS and a bearer
token on /metrics when asked (as the receivers have); receive-side errors are logged as
what they are, once per interval."""
from __future__ import annotations

import dataclasses
import ssl
import urllib.error
import urllib.request

import pytest
from structlog.testing import capture_logs

from faultgate_stream.config import ServiceConfig
from faultgate_stream.export.metrics.config import MetricsConfig
from faultgate_stream.receive.config import ServerTLS
from faultgate_stream.receive.take import take
from faultgate_stream.receive.telemetry import ReceiverTelemetry
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.read.otlp_proto import Decoded
from tests.certs import make_certs
from tests.live_service import make_config

TOKEN = "metrics-token-0123456789"


def _get(url: str, token: str = "", context: ssl.SSLContext | None = None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10, context=context) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_metrics_and_probes_bind_to_loopback_by_default_the_receivers_do_not():
    config = ServiceConfig()
    assert config.metrics.endpoint.rsplit(":", 1)[0] == "127.0.0.1"
    assert config.receive.grpc_endpoint.startswith("0.0.0.0:")


def test_a_metrics_token_guards_metrics_and_leaves_the_probes_open(live_service, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    live = live_service(dataclasses.replace(make_config(), metrics=MetricsConfig(
        endpoint="127.0.0.1:0", bearer_token_file=str(token_file))))
    base = f"http://127.0.0.1:{live.service.ports['metrics']}"
    assert _get(base + "/metrics") == 401
    assert _get(base + "/metrics", "wrong") == 401
    assert _get(base + "/metrics", TOKEN) == 200
    assert _get(base + "/healthz") == 200 and _get(base + "/readyz") == 200


def test_metrics_over_tls_refuse_plaintext(live_service, tmp_path):
    certs = make_certs(tmp_path)
    tls = ServerTLS(cert_file=str(certs.server_cert), key_file=str(certs.server_key))
    live = live_service(dataclasses.replace(make_config(), metrics=MetricsConfig(endpoint="127.0.0.1:0", tls=tls)))
    port = live.service.ports["metrics"]
    assert _get(f"https://127.0.0.1:{port}/healthz", context=ssl.create_default_context(cafile=str(certs.ca))) == 200
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        _get(f"http://127.0.0.1:{port}/healthz")


def test_a_blank_metrics_token_file_is_a_config_error(tmp_path):
    from faultgate_stream.config import ConfigError, load

    (tmp_path / "token").write_text("")
    (tmp_path / "c.yaml").write_text(f"metrics: {{bearer_token_file: {str(tmp_path / 'token')!r}}}\n")
    with pytest.raises(ConfigError) as e:
        load(tmp_path / "c.yaml")
    assert any(p.startswith("metrics.bearer_token_file:") and "empty" in p for p in e.value.problems), \
        e.value.problems


def test_a_receive_side_bug_is_logged_as_such_once_per_interval_and_each_refusal_counted():
    class Broken:
        def consume(self, spans, request):
            raise TypeError("a bug of ours")

    telemetry = Telemetry()
    t = ReceiverTelemetry(telemetry, "grpc")
    with capture_logs() as logs:
        for _ in range(50):
            _, refusal = take(lambda: (None, Decoded([object()], 0, "")), Broken(), t)  # type: ignore[list-item]
            assert refusal is not None and refusal.retryable
    events = [e["event"] for e in logs]
    assert events == ["receive_internal_error"], events
    assert logs[0]["error_type"] == "TypeError"  # logged once, with its class
    assert telemetry.registry.get_sample_value("faultgate_receiver_refused_spans_total",
                                               {"transport": "grpc", "reason": "internal_error"}) == 50
    # every one of them an internal error, whatever the answer it led to (issue 42)
    assert telemetry.registry.get_sample_value("faultgate_internal_errors_total", {"stage": "receive"}) == 50
