"""The OTLP rules, on the wire: statuses, partial success, size limits, capacity refusal."""
from __future__ import annotations

import dataclasses
import gzip
import json
import urllib.error
import urllib.request

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest, ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from faultgate_stream.receive.config import ReceiveConfig
from tests.live_service import make_config


def _request(*spans: Span) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    req.resource_spans.add().scope_spans.add().spans.extend(spans)
    return req


def _span(trace: int, span: int, parent: int = 0, name: str = "invoke_agent", **attrs: str) -> Span:
    s = Span(trace_id=trace.to_bytes(16, "big"), span_id=span.to_bytes(8, "big"), name=name,
             start_time_unix_nano=1_700_000_000_000_000_000 + span, end_time_unix_nano=1_700_000_001_000_000_000)
    if parent:
        s.parent_span_id = parent.to_bytes(8, "big")
    for k, v in attrs.items():
        kv = s.attributes.add(key=k.replace("__", "."))
        kv.value.string_value = v
    return s


def _stub(live):
    channel = grpc.insecure_channel(live.grpc)
    return channel, trace_service_pb2_grpc.TraceServiceStub(channel)


def _post(url: str, body: bytes, content_type: str, **headers: str):
    req = urllib.request.Request(url + "/v1/traces", data=body, method="POST",
                                 headers={"Content-Type": content_type, **headers})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_an_undecodable_grpc_payload_is_invalid_argument(live_service):
    live = live_service()
    channel = grpc.insecure_channel(live.grpc)
    raw = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
    with pytest.raises(grpc.RpcError) as e:
        raw(b"\xff\xff\xff garbage", timeout=5)
    channel.close()
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "ExportTraceServiceRequest" in e.value.details()
    assert live.sample("faultgate_receiver_rejected_requests_total", transport="grpc", reason="undecodable") == 1


def test_bad_spans_get_a_partial_success_naming_the_first_problem_and_good_ones_are_kept(live_service):
    live = live_service()
    channel, stub = _stub(live)
    bad = _span(1, 2)
    bad.trace_id = b"\x00" * 16
    resp = stub.Export(_request(_span(7, 1, gen_ai__operation__name="invoke_agent"), bad), timeout=5)
    channel.close()
    assert resp.partial_success.rejected_spans == 1
    assert "trace_id" in resp.partial_success.error_message
    assert live.sample("faultgate_receiver_accepted_spans_total", transport="grpc") == 1
    assert live.sample("faultgate_receiver_rejected_spans_total", transport="grpc", reason="invalid_span") == 1
    assert len(live.sink.wait_for(1)) == 1


def test_at_capacity_grpc_refuses_with_unavailable_and_retry_info(live_service):
    live = live_service(max_traces=1, root_grace=60)
    channel, stub = _stub(live)
    stub.Export(_request(_span(1, 1, gen_ai__operation__name="invoke_agent")), timeout=5)
    with pytest.raises(grpc.RpcError) as e:
        stub.Export(_request(_span(2, 1, gen_ai__operation__name="invoke_agent")), timeout=5)
    channel.close()
    assert e.value.code() == grpc.StatusCode.UNAVAILABLE
    status = rpc_status.from_call(e.value)
    info = error_details_pb2.RetryInfo()
    assert status is not None and status.details[0].Unpack(info)
    assert info.retry_delay.seconds >= 1
    assert live.sample("faultgate_receiver_refused_spans_total", transport="grpc", reason="max_traces") == 1


def test_at_capacity_http_answers_503_with_retry_after_and_a_status_body(live_service):
    live = live_service(max_traces=1, root_grace=60)
    body = _request(_span(1, 1, gen_ai__operation__name="invoke_agent")).SerializeToString()
    assert _post(live.http, body, "application/x-protobuf")[0] == 200
    code, headers, payload = _post(live.http, json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "00000000000000000000000000000002", "spanId": "0000000000000001", "name": "x"}]}]}]}).encode(),
        "application/json")
    assert code == 503 and int(headers["Retry-After"]) >= 1
    assert json.loads(payload)["code"] == grpc.StatusCode.UNAVAILABLE.value[0]


def test_an_oversized_grpc_request_is_resource_exhausted(live_service):
    cfg = make_config()
    live = live_service(dataclasses.replace(cfg, receive=dataclasses.replace(cfg.receive, max_request_bytes=4096)))
    channel, stub = _stub(live)
    with pytest.raises(grpc.RpcError) as e:
        stub.Export(_request(_span(1, 1, big="x" * 10_000)), timeout=5)
    channel.close()
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_http_checks_the_size_limit_after_decompression(live_service):
    cfg = make_config()
    live = live_service(dataclasses.replace(cfg, receive=ReceiveConfig(
        grpc_endpoint="127.0.0.1:0", http_endpoint="127.0.0.1:0", max_request_bytes=64 * 1024)))
    bomb = gzip.compress(_request(_span(1, 1, big="x" * 1_000_000)).SerializeToString())
    assert len(bomb) < 64 * 1024
    code, _, payload = _post(live.http, bomb, "application/x-protobuf", **{"Content-Encoding": "gzip"})
    assert code == 413
    small = gzip.compress(_request(_span(1, 1, gen_ai__operation__name="invoke_agent")).SerializeToString())
    code, headers, payload = _post(live.http, small, "application/x-protobuf", **{"Content-Encoding": "gzip"})
    assert code == 200 and headers["Content-Type"] == "application/x-protobuf"
    ExportTraceServiceResponse.FromString(payload)


def test_http_answers_in_the_request_content_type_and_refuses_others(live_service):
    live = live_service()
    code, headers, payload = _post(live.http, b"{not json", "application/json")
    assert code == 400 and headers["Content-Type"].startswith("application/json")
    assert "not valid JSON" in json.loads(payload)["message"]
    code, _, _ = _post(live.http, b"\xff\xfe", "application/x-protobuf")
    assert code == 400
    assert _post(live.http, b"x", "text/plain")[0] == 415
    assert live.sample("faultgate_receiver_rejected_requests_total", transport="http",
                       reason="unsupported_media_type") == 1


def test_a_denied_call_fires_early_before_the_root_arrives_and_again_in_the_verdict(live_service):
    live = live_service(root_grace=0.2)
    channel, stub = _stub(live)
    tool = _span(5, 2, parent=1, name="execute_tool read_file", gen_ai__operation__name="execute_tool",
                 gen_ai__tool__name="read_file", gen_ai__tool__call__arguments='{"path": "../../etc/passwd"}')
    stub.Export(_request(tool), timeout=5)
    assert live.sample("faultgate_check_early_fired_total", check="policy") == 1
    assert live.sink.verdicts == []
    stub.Export(_request(_span(5, 1, gen_ai__operation__name="invoke_agent", gen_ai__agent__name="files")), timeout=5)
    channel.close()
    (verdict,) = live.sink.wait_for(1)
    assert [r.check for r in verdict.fired] == ["policy"]
    assert [f.check for f in verdict.early] == ["policy"]
    assert live.sample("faultgate_check_fired_total", agent="files", check="policy") == 1
    text = live.metrics()
    exemplar = next(line for line in text.splitlines() if line.startswith("faultgate_check_early_fired_total{"))
    assert f'trace_id="{(5).to_bytes(16, "big").hex()}"' in exemplar and 'span_id="0000000000000002"' in exemplar


def test_duplicates_are_counted_and_agents_past_the_cap_fold_into_other(live_service):
    cfg = make_config()
    live = live_service(dataclasses.replace(cfg, metrics=dataclasses.replace(cfg.metrics, max_agents=2)))
    channel, stub = _stub(live)
    for t in range(1, 5):
        req = _request(_span(t, 1, gen_ai__operation__name="invoke_agent", gen_ai__agent__name=f"agent-{t}"))
        stub.Export(req, timeout=5)
        if t == 1:
            stub.Export(req, timeout=5)
    channel.close()
    live.sink.wait_for(4)
    assert live.sample("faultgate_duplicate_spans_total") == 1
    assert live.sample("faultgate_runs_total", agent="other") == 2
    assert live.sample("faultgate_label_values_folded_total", label="agent") == 2
    assert live.sample("faultgate_runs_in_memory") == 0
