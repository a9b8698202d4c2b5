"""The live verdict stream, over a real gRPC server and real clients using the generated stub."""
from __future__ import annotations

import filecmp
import importlib.metadata
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest
from prometheus_client import CollectorRegistry

from faultgate_stream.export.stream.config import StreamConfig
from faultgate_stream.export.stream.encode import encode
from faultgate_stream.export.stream.gen import verdict_pb2 as pb
from faultgate_stream.export.stream import client as verdict_pb2_grpc
from faultgate_stream.export.stream.sink import VerdictStream
from faultgate_stream.model.records import RunKey
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.model.verdict import CheckResult, Completion, EarlyFinding, RunVerdict, Severity
from faultgate_stream.receive.grpc_server import GrpcReceiver
from faultgate_stream.verdict.redact import get_redactor

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "faultgate_stream" / "export" / "stream" / "gen"
REDACT = get_redactor("builtin")
DEADLINE_S = 30.0  # every RPC and wait below; a hang fails the test instead of stalling the run


def run_verdict(i: int, *, agent: str = "billing", failed: bool = False, reason: str = "",
                scenario: str = "refund", early: tuple[EarlyFinding, ...] = ()) -> RunVerdict:
    trace = f"{i:032x}"
    results = (CheckResult("repeated_call", failed, 0.9, reason or f"run {i}", Severity.SOFT),
               CheckResult("truncation", False, 1.0, ""))
    return RunVerdict(key=RunKey(trace, f"{i:016x}"), scenario=scenario, agent=agent, agent_version="1.2",
                      completion=Completion.GRACE, results=results, steps=3, spans=7, decided_ns=1_700_000_000 + i,
                      root_span_id=f"{i:016x}", early=early)


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll with a deadline: the condition is the synchronisation, the interval only its grain."""
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.001)


@contextmanager
def served(stream: VerdictStream, *, workers: int = 8) -> Iterator[verdict_pb2_grpc.VerdictServiceStub]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers))
    server.add_generic_rpc_handlers((stream.handler(),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        stub = verdict_pb2_grpc.VerdictServiceStub(channel)
        stub.channel = channel  # for requests the generated stub would not send
        yield stub
    finally:
        stream.close()
        channel.close()
        server.stop(None).wait()


def subscribe(stub: verdict_pb2_grpc.VerdictServiceStub, stream: VerdictStream, *, expect: int,
              agents: tuple[str, ...] = (), only_failed: bool = False) -> grpc.Call:
    """Start a subscription and return once the server counts ``expect`` subscribers."""
    call = stub.Subscribe(pb.SubscribeRequest(agents=agents, only_failed=only_failed), timeout=DEADLINE_S)
    wait_until(lambda: stream.subscribers() == expect, f"{expect} subscribers")
    return call


def take(call: grpc.Call, n: int) -> list[pb.Verdict]:
    return [next(call) for _ in range(n)]


def ended(call: grpc.Call) -> list[pb.Verdict]:
    """What is left on a stream the server has closed; the stream must end with OK."""
    rest = list(call)
    assert call.code() is grpc.StatusCode.OK
    return rest


# --- delivery ---------------------------------------------------------------------------


def test_a_subscriber_receives_each_published_verdict_exactly_once_and_in_order():
    stream = VerdictStream(REDACT)
    with served(stream) as stub:
        call = subscribe(stub, stream, expect=1)
        for i in range(50):
            stream.verdict(run_verdict(i))
        got = take(call, 50)
        stream.close()
        assert ended(call) == []
    assert [v.trace_id for v in got] == [f"{i:032x}" for i in range(50)]
    assert stream.dropped == 0


def test_a_subscriber_sees_only_verdicts_published_after_it_subscribed():
    stream = VerdictStream(REDACT)
    with served(stream) as stub:
        stream.verdict(run_verdict(0))
        call = subscribe(stub, stream, expect=1)
        stream.verdict(run_verdict(1))
        stream.close()
        assert [v.trace_id for v in ended(call)] == [f"{1:032x}"]


def test_the_agents_and_only_failed_filters_are_applied_by_the_server():
    stream = VerdictStream(REDACT)
    published = [run_verdict(0, agent="billing"), run_verdict(1, agent="search", failed=True),
                 run_verdict(2, agent="billing", failed=True), run_verdict(3, agent="triage", failed=True),
                 run_verdict(4, agent="search")]
    with served(stream) as stub:
        billing = subscribe(stub, stream, expect=1, agents=("billing",))
        failed = subscribe(stub, stream, expect=2, only_failed=True)
        both = subscribe(stub, stream, expect=3, agents=("billing", "search"), only_failed=True)
        for v in published:
            stream.verdict(v)
        stream.close()
        assert [v.run_id for v in ended(billing)] == [str(published[i].key) for i in (0, 2)]
        assert [v.run_id for v in ended(failed)] == [str(published[i].key) for i in (1, 2, 3)]
        assert [v.run_id for v in ended(both)] == [str(published[i].key) for i in (1, 2)]


def test_two_subscribers_each_receive_every_verdict():
    stream = VerdictStream(REDACT)
    with served(stream) as stub:
        first = subscribe(stub, stream, expect=1)
        second = subscribe(stub, stream, expect=2)
        for i in range(20):
            stream.verdict(run_verdict(i, failed=i % 2 == 0))
        stream.close()
        expected = [f"{i:032x}" for i in range(20)]
        assert [v.trace_id for v in ended(first)] == expected
        assert [v.trace_id for v in ended(second)] == expected


def test_a_subscriber_that_never_reads_blocks_neither_publishing_nor_others_and_its_drops_are_counted():
    registry = CollectorRegistry()
    stream = VerdictStream(REDACT, StreamConfig(queue_size=4), registry=registry)
    total = 300
    # Large verdicts: gRPC buffers a few MiB for a client that does not read (~70 of
    # these), then the idle stream's handler is stuck in a send, its queue of 4 fills,
    # and the rest of the 300 (~19 MB) drop.
    padding = "x" * 64_000
    with served(stream) as stub:
        idle = subscribe(stub, stream, expect=1)
        reader = subscribe(stub, stream, expect=2)
        read: list[pb.Verdict] = []

        def drain() -> None:
            for v in reader:
                read.append(v)

        threading.Thread(target=drain, daemon=True).start()

        def publish() -> None:
            for i in range(total):
                stream.verdict(run_verdict(i, reason=padding))
                # paced by the reader, so its queue of 4 never fills: every drop is the idle one's
                wait_until(lambda: len(read) == i + 1, f"the reader to get verdict {i}")

        publisher = threading.Thread(target=publish, daemon=True)
        publisher.start()
        publisher.join(DEADLINE_S)
        assert not publisher.is_alive(), "publishing waited for a subscriber that does not read"
        assert [v.trace_id for v in read] == [f"{i:032x}" for i in range(total)]
        assert stream.dropped > 0, stream.dropped
        assert registry.get_sample_value("faultgate_stream_dropped_verdicts_total",
                                         {"reason": "queue_full"}) == stream.dropped
        # What the idle client did get is what was not dropped: each verdict once or counted.
        stream.close()
        late = ended(idle)
        assert len(late) + stream.dropped == total
        assert len({v.trace_id for v in late}) == len(late)


# --- what leaves the process ------------------------------------------------------------


def test_secrets_and_emails_never_reach_the_client():
    secrets = ["sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv", "alice.smith@example.com",
               "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
               "4111 1111 1111 1111"]
    v = run_verdict(1, failed=True, scenario="refund/alice.smith@example.com",
                    reason=f"tool called with key {secrets[0]} for {secrets[1]}",
                    early=(EarlyFinding(f"{1:032x}", "00000000000000aa", "policy",
                                        f"token {secrets[2]} and card {secrets[3]}"),))
    stream = VerdictStream(REDACT)
    with served(stream) as stub:
        call = subscribe(stub, stream, expect=1)
        stream.verdict(v)
        (got,) = take(call, 1)
    wire = got.SerializeToString()
    for secret in secrets:
        assert secret.encode() not in wire
    assert "<SECRET>" in got.results[0].reason and "<EMAIL>" in got.results[0].reason
    assert "<SECRET>" in got.early[0].reason and "<CREDIT_CARD>" in got.early[0].reason
    assert re.fullmatch(r"refund/<EMAIL>#[0-9a-f]{8}", got.scenario)


def test_a_verdict_carries_the_runs_record_of_truth():
    early = EarlyFinding(f"{7:032x}", "00000000000000bb", "repeated_call", "same call twice")
    v = run_verdict(7, failed=True, reason="called search 4 times", early=(early,))
    got = encode(v, REDACT)
    assert (got.run_id, got.trace_id, got.root_span_id) == (f"{7:032x}/{7:016x}", f"{7:032x}", f"{7:016x}")
    assert (got.scenario, got.agent, got.agent_version) == ("refund", "billing", "1.2")
    assert (got.verdict, got.completion, got.steps, got.spans) == (pb.OUTCOME_FAILED, pb.COMPLETION_GRACE, 3, 7)
    assert got.decided_time_unix_nano == 1_700_000_007
    assert [(r.check, r.fired, r.confidence, r.severity, r.reason, r.kind) for r in got.results] == [
        ("repeated_call", True, 0.9, pb.SEVERITY_SOFT, "called search 4 times", "rule"),
        ("truncation", False, 1.0, pb.SEVERITY_HARD, "", "rule")]
    assert [(f.check, f.span_id, f.reason) for f in got.early] == [("repeated_call", "00000000000000bb",
                                                                    "same call twice")]
    assert encode(run_verdict(8), REDACT).verdict == pb.OUTCOME_CLEAN


def test_every_completion_and_severity_has_its_own_proto_value():
    completions = {encode(_with_completion(c), REDACT).completion for c in Completion}
    assert len(completions) == len(Completion) and pb.COMPLETION_UNSPECIFIED not in completions
    for s in Severity:
        result = CheckResult("c", True, 1.0, "", s)
        got = encode(_with_results((result,)), REDACT)
        assert pb.Severity.Name(got.results[0].severity) == f"SEVERITY_{s.name}"


def _with_completion(c: Completion) -> RunVerdict:
    v = run_verdict(0)
    return RunVerdict(v.key, v.scenario, v.agent, v.agent_version, c, v.results, v.steps, v.spans)


def _with_results(results: tuple[CheckResult, ...]) -> RunVerdict:
    v = run_verdict(0)
    return RunVerdict(v.key, v.scenario, v.agent, v.agent_version, v.completion, results, v.steps, v.spans)


def test_publishing_with_no_interested_subscriber_masks_and_encodes_nothing():
    calls = []

    def counting(text: str) -> str:
        calls.append(text)
        return text

    stream = VerdictStream(counting)
    stream.verdict(run_verdict(0))
    with served(stream) as stub:
        subscribe(stub, stream, expect=1, agents=("search",))
        stream.verdict(run_verdict(1, agent="billing"))
    assert calls == []


# --- the subscriber set -----------------------------------------------------------------


def test_a_client_cancel_frees_the_subscriber_slot_and_its_thread():
    stream = VerdictStream(REDACT, StreamConfig(max_subscribers=1))
    # One worker: the second subscription can only be served once the first one's
    # handler thread has returned, so this also proves the cancel leaked no thread.
    with served(stream, workers=1) as stub:
        first = subscribe(stub, stream, expect=1)
        first.cancel()
        wait_until(lambda: stream.subscribers() == 0, "the cancelled subscriber to leave")
        second = subscribe(stub, stream, expect=1)
        stream.verdict(run_verdict(1))
        assert [v.trace_id for v in take(second, 1)] == [f"{1:032x}"]
    assert first.code() is grpc.StatusCode.CANCELLED


def test_subscribing_past_the_cap_is_refused_with_resource_exhausted():
    stream = VerdictStream(REDACT, StreamConfig(max_subscribers=2))
    with served(stream) as stub:
        kept = [subscribe(stub, stream, expect=1), subscribe(stub, stream, expect=2)]
        refused = stub.Subscribe(pb.SubscribeRequest(), timeout=DEADLINE_S)
        with pytest.raises(grpc.RpcError) as err:
            next(refused)
        assert err.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "2 subscribers" in err.value.details()
        assert (stream.refused, stream.subscribers()) == (1, 2)
        stream.verdict(run_verdict(1))
        assert [take(call, 1)[0].trace_id for call in kept] == [f"{1:032x}"] * 2


@pytest.mark.parametrize("body", [b"\x0a\x02\xff\xfe", b"\x0a\x09short", b"\x0f"],
                         ids=["agents not utf-8", "cut short", "bad tag"])
def test_a_request_that_is_not_a_subscription_is_refused_as_invalid_argument_without_a_traceback(body, caplog):
    """Issue 42: grpc's own deserializer answered INTERNAL and logged a traceback."""
    from faultgate_stream.export.stream.client import SUBSCRIBE

    stream = VerdictStream(REDACT, StreamConfig())
    with served(stream) as stub:
        call = stub.channel.unary_stream(SUBSCRIBE)(body, timeout=DEADLINE_S)  # bytes as they are
        with pytest.raises(grpc.RpcError) as err:
            next(call)
        assert err.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert "not a SubscribeRequest" in err.value.details()
        assert stream.subscribers() == 0
    assert not [r for r in caplog.records if r.exc_info]


def test_close_ends_every_stream_with_ok_after_what_was_queued_and_refuses_new_subscribers():
    stream = VerdictStream(REDACT)
    with served(stream) as stub:
        call = subscribe(stub, stream, expect=1)
        for i in range(3):
            stream.verdict(run_verdict(i))
        stream.close()
        assert len(ended(call)) == 3
        assert stream.subscribers() == 0
        late = stub.Subscribe(pb.SubscribeRequest(), timeout=DEADLINE_S)
        with pytest.raises(grpc.RpcError) as err:
            next(late)
        assert err.value.code() is grpc.StatusCode.UNAVAILABLE
        stream.close()  # a second close is harmless


def test_the_stream_is_served_on_the_otlp_receivers_port():
    class NoSpans:
        def consume(self, spans: list, request: object = None) -> None:
            pass

    stream = VerdictStream(REDACT)
    receiver = GrpcReceiver("127.0.0.1:0", NoSpans(), Telemetry(CollectorRegistry()), max_request_bytes=1 << 20,
                            workers=2 + stream.config.max_subscribers)
    receiver.add_generic_rpc_handlers((stream.handler(),))
    receiver.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel:
            call = verdict_pb2_grpc.VerdictServiceStub(channel).Subscribe(pb.SubscribeRequest(), timeout=DEADLINE_S)
            wait_until(lambda: stream.subscribers() == 1, "the subscriber")
            stream.verdict(run_verdict(5))
            assert take(call, 1)[0].trace_id == f"{5:032x}"
            stream.close()
            assert ended(call) == []
    finally:
        receiver.stop(None)


# --- settings and generated code --------------------------------------------------------


def test_stream_config_reports_each_problem_and_the_stream_refuses_a_bad_one():
    assert StreamConfig().validate() == []
    assert StreamConfig(max_subscribers=0, queue_size=0).validate() == [
        "max_subscribers: must be >= 1", "queue_size: must be >= 1"]
    with pytest.raises(ValueError, match="queue_size"):
        VerdictStream(REDACT, StreamConfig(queue_size=0))


def _files(folder: Path) -> dict[str, Path]:
    return {p.relative_to(folder).as_posix(): p for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def test_the_generated_code_is_reproducible_from_proto(tmp_path):
    made = subprocess.run(["bash", str(ROOT / "scripts" / "gen_proto.sh"), str(tmp_path)],
                          env={**os.environ, "PYTHON": sys.executable}, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    fresh, committed = _files(tmp_path), _files(GEN)
    hint = (f"the committed code differs from what grpcio-tools {importlib.metadata.version('grpcio-tools')} "
            "makes now; rerun scripts/gen_proto.sh and commit the result")
    assert sorted(fresh) == sorted(committed), hint
    assert [name for name in fresh if not filecmp.cmp(fresh[name], committed[name], shallow=False)] == [], hint
