"""The verdict stream on the service's gRPC port: a real client gets each verdict once."""
from __future__ import annotations

import threading

import grpc

from faultgate_stream.checks.registry import select
from faultgate_stream.cli.replay import GrpcSender, replay
from faultgate_stream.export.stream import client as verdict_pb2_grpc
from faultgate_stream.export.stream.gen import verdict_pb2
from faultgate_stream.pipeline import check_spans
from faultgate_stream.read.files import read_file
from tests.conftest import CORPUS
from tests.peers import eventually

FILES = [CORPUS / "faultgate-0.4.1" / f for f in ("examples/traces.json", "tests/fixtures/retail_gaps.json")]


def _subscribe(target: str, request: verdict_pb2.SubscribeRequest, into: list) -> tuple[grpc.Channel, object]:
    channel = grpc.insecure_channel(target)
    stream = verdict_pb2_grpc.VerdictServiceStub(channel).Subscribe(request)

    def read() -> None:
        try:
            for m in stream:
                into.append(m)
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.CANCELLED

    threading.Thread(target=read, daemon=True).start()
    return channel, stream


def test_subscribers_get_each_verdict_once_and_filters_apply(live_service):
    offline = check_spans([read_file(p)[1] for p in FILES], select())
    live = live_service()
    everything, failed_retail = [], []
    c1, s1 = _subscribe(live.grpc, verdict_pb2.SubscribeRequest(), everything)
    c2, s2 = _subscribe(live.grpc, verdict_pb2.SubscribeRequest(agents=["retail"], only_failed=True), failed_retail)
    eventually(lambda: live.service.stream.subscribers() == 2, what="two subscriptions")
    sender = GrpcSender(live.grpc)
    replay([str(p) for p in FILES], sender)
    sender.close()
    live.sink.wait_for(len(offline))
    eventually(lambda: len(everything) == len(offline), what="every verdict streamed")
    expected_failed = {str(v.key) for v in offline if not v.clean and v.agent == "retail"}
    eventually(lambda: len(failed_retail) == len(expected_failed), what="the filtered verdicts")
    for s, c in ((s1, c1), (s2, c2)):
        s.cancel()
        c.close()
    assert sorted(m.run_id for m in everything) == sorted(str(v.key) for v in offline)
    assert {m.run_id for m in failed_retail} == expected_failed
    assert all(m.verdict == verdict_pb2.OUTCOME_FAILED for m in failed_retail)
    by_run = {m.run_id: m for m in everything}
    for v in offline:
        m = by_run[str(v.key)]
        assert [(r.check, r.fired) for r in m.results] == [(r.check, r.fired) for r in v.results]
