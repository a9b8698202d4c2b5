"""TLS, mTLS and the bearer token on both receivers; TLS and headers on the exporter."""
from __future__ import annotations

import dataclasses
import ssl
import urllib.error
import urllib.request

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from faultgate_stream.receive.config import ReceiveConfig, ServerTLS
from tests.certs import make_certs
from tests.live.test_receivers import _request, _span
from tests.live_service import make_config

TOKEN = "s3cret-token-0123456789"


def _export(target: str, creds: grpc.ChannelCredentials | None = None, token: str = "") -> grpc.StatusCode:
    channel = grpc.secure_channel(target, creds) if creds else grpc.insecure_channel(target)
    stub = trace_service_pb2_grpc.TraceServiceStub(channel)
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    try:
        stub.Export(_request(_span(3, 1, gen_ai__operation__name="invoke_agent")), timeout=5, metadata=metadata)
        return grpc.StatusCode.OK
    except grpc.RpcError as e:
        return e.code()
    finally:
        channel.close()


def _post(url: str, context: ssl.SSLContext | None = None, token: str = "") -> int:
    headers = {"Content-Type": "application/x-protobuf"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url + "/v1/traces", data=_request(_span(4, 1)).SerializeToString(), headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=5, context=context) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


def _with(receive: ReceiveConfig):
    return dataclasses.replace(make_config(), receive=receive)


def test_with_a_bearer_token_a_client_without_the_right_token_is_unauthenticated(live_service):
    live = live_service(_with(ReceiveConfig(grpc_endpoint="127.0.0.1:0", http_endpoint="127.0.0.1:0",
                                            bearer_token=TOKEN)))
    assert _export(live.grpc) == grpc.StatusCode.UNAUTHENTICATED
    assert _export(live.grpc, token="wrong") == grpc.StatusCode.UNAUTHENTICATED
    assert _export(live.grpc, token=TOKEN) == grpc.StatusCode.OK
    assert _post(live.http) == 401 and _post(live.http, token="nope") == 401
    assert _post(live.http, token=TOKEN) == 200


def test_tls_receivers_refuse_plaintext_and_accept_a_client_that_trusts_the_ca(live_service, certs):
    tls = ServerTLS(cert_file=str(certs.server_cert), key_file=str(certs.server_key))
    live = live_service(_with(ReceiveConfig(grpc_endpoint="127.0.0.1:0", http_endpoint="127.0.0.1:0", tls=tls)))
    trusted = grpc.ssl_channel_credentials(root_certificates=certs.ca.read_bytes())
    assert _export(live.grpc) == grpc.StatusCode.UNAVAILABLE  # a plaintext client cannot talk TLS
    assert _export(live.grpc, trusted) == grpc.StatusCode.OK
    https = live.http.replace("http://", "https://")
    ctx = ssl.create_default_context(cafile=str(certs.ca))
    assert _post(https, ctx) == 200
    with pytest.raises(urllib.error.URLError):
        _post(https, ssl.create_default_context())  # the system roots do not know our CA


def test_mtls_refuses_clients_without_a_certificate_from_the_ca(live_service, certs):
    tls = ServerTLS(cert_file=str(certs.server_cert), key_file=str(certs.server_key), client_ca_file=str(certs.ca))
    live = live_service(_with(ReceiveConfig(grpc_endpoint="127.0.0.1:0", http_endpoint="127.0.0.1:0", tls=tls)))
    ca = certs.ca.read_bytes()
    no_cert = grpc.ssl_channel_credentials(root_certificates=ca)
    rogue = grpc.ssl_channel_credentials(root_certificates=ca, private_key=certs.rogue_key.read_bytes(),
                                         certificate_chain=certs.rogue_cert.read_bytes())
    good = grpc.ssl_channel_credentials(root_certificates=ca, private_key=certs.client_key.read_bytes(),
                                        certificate_chain=certs.client_cert.read_bytes())
    assert _export(live.grpc, no_cert) == grpc.StatusCode.UNAVAILABLE
    assert _export(live.grpc, rogue) == grpc.StatusCode.UNAVAILABLE
    assert _export(live.grpc, good) == grpc.StatusCode.OK
    https = live.http.replace("http://", "https://")
    ctx = ssl.create_default_context(cafile=str(certs.ca))
    with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
        _post(https, ctx)
    ctx.load_cert_chain(str(certs.client_cert), str(certs.client_key))
    assert _post(https, ctx) == 200
