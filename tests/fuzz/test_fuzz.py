"""Fuzzing both receivers and every offline reader (issue 9, acceptance): no internal
errors, no tracebacks, a permanent answer for input that can never succeed.

Brief here (bounded examples, so CI stays quick); the soak runs the same targets for as
many inputs as you give it: ``.venv/bin/python bench/fuzz_soak.py --inputs 1000000``.
The corpus holds the inputs that once crashed a reader; every one is replayed each run.
"""
from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest
import urllib.error
import urllib.request
from hypothesis import HealthCheck, given, settings
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from faultgate_stream.model.errors import InputError
from faultgate_stream.read.otlp_json import to_request
from tests.fuzz import hostile, strategies, targets

# *.bin: protobuf bodies the soak's byte mutants found
CORPUS = sorted(p for p in (Path(__file__).parent / "corpus").iterdir() if p.suffix in (".json", ".bin"))
BRIEF = settings(max_examples=120, deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                        HealthCheck.filter_too_much])


def _proto_body(doc) -> bytes | None:
    try:
        request, _, _ = to_request(json.loads(strategies.dumps(doc)))  # a copy: to_request rewrites ids
    except InputError:
        return None
    return request.SerializeToString()


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_the_corpus_meets_every_target_without_an_internal_error(path):
    data = path.read_bytes()
    engine = targets.Engine()
    if path.suffix == ".bin":
        engine.receive(data, "grpc")
        return
    engine.receive(data, "http", json=True)
    engine.receive(data, "grpc")  # the same bytes as protobuf: undecodable, never internal
    try:
        doc = json.loads(data.decode("utf-8-sig"))
    except ValueError:
        doc = None
    if doc is not None:
        targets.offline(doc)
        body = _proto_body(doc) if isinstance(doc, dict) else None
        if body is not None:
            engine.receive(body, "grpc")
    code, _ = targets.check_file(data)
    assert code in (0, 1, 2)


def test_mutants_of_a_real_trace_never_get_an_internal_error():
    """The soak's mutator, briefly: one place changed per mutant, in JSON and in bytes."""
    import random

    from tests.fuzz import mutate
    doc = json.loads((Path(__file__).parents[2] / "examples/traces/retail_gaps.json").read_text())
    rng, engine = random.Random(7), targets.Engine()
    for i in range(150):
        m = mutate.mutant(doc, rng)
        body = strategies.dumps(m)
        engine.receive(body, "http", json=True)
        wire = _proto_body(m) if isinstance(m, dict) else None
        if wire is not None:
            engine.receive(mutate.byte_mutant(wire, rng), "grpc")
        if i % 3 == 0:
            targets.offline(m)


@BRIEF
@given(strategies.otlp_document())
def test_otlp_json_requests_never_get_an_internal_error(doc):
    targets.Engine().receive(strategies.dumps(doc), "http", json=True)


@BRIEF
@given(strategies.otlp_document())
def test_otlp_protobuf_requests_never_get_an_internal_error(doc):
    body = _proto_body(doc)
    if body is not None:
        targets.Engine().receive(body, "grpc")


@BRIEF
@given(hostile.any_hostile)
def test_issue_42s_classes_get_a_permanent_answer_and_every_span_taken_or_rejected(h):
    """Deep and wide values, GenAI event bodies of the wrong shape, protobuf's field names,
    malformed copies of valid spans (tests/fuzz/hostile.py): over the live service in
    tests/fuzz/test_hostile.py, in process here."""
    targets.Engine().hostile(h)


@BRIEF
@given(strategies.any_document())
def test_every_offline_reader_answers_with_spans_or_an_input_error(doc):
    targets.offline(doc)


@settings(BRIEF, max_examples=40)
@given(strategies.any_document())
def test_check_exits_0_1_or_2_with_one_line_and_no_traceback(doc):
    targets.check_file(strategies.dumps(doc))


def test_the_real_receivers_answer_fuzzed_requests_with_ok_partial_success_or_a_permanent_error(live_service):
    """The service itself, over gRPC and HTTP: hypothesis draws the requests in this
    thread and sends each over both transports."""
    live = live_service()
    channel = grpc.insecure_channel(live.grpc)
    stub = trace_service_pb2_grpc.TraceServiceStub(channel)
    answers: list[str] = []

    @settings(BRIEF, max_examples=60)
    @given(strategies.otlp_document())
    def send(doc):
        body = strategies.dumps(doc)
        req = urllib.request.Request(live.http + "/v1/traces", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                answers.append(f"http {r.status}")
        except urllib.error.HTTPError as e:
            assert e.code in (400, 413), e.read()[:300]
            answers.append(f"http {e.code}")
        proto = _proto_body(doc)
        if proto is not None:
            try:
                stub.Export(ExportTraceServiceRequest.FromString(proto), timeout=10)
                answers.append("grpc OK")
            except grpc.RpcError as e:
                assert e.code() is grpc.StatusCode.INVALID_ARGUMENT, e.details()
                answers.append(f"grpc {e.code().name}")

    send()
    channel.close()
    assert live.sample("faultgate_receiver_refused_spans_total") == 0
    assert live.sample("faultgate_internal_errors_total") == 0
    assert live.sample("faultgate_check_errors_total") == 0
    assert "http 200" in answers and "grpc OK" in answers  # the fuzzer reached the engine
