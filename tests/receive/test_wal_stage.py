"""The write-ahead log in the running service (receive/wal/stage.py): requests over real
OTLP/gRPC are logged before they are acknowledged, checkpoints cover what is decided and
the covered segments go, a refused request is never replayed, a full log refuses
retryably, and a start replays what no checkpoint covers, its verdicts counted."""
from __future__ import annotations

import dataclasses
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from faultgate_stream.config import ServiceConfig
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.model.threads import Threads
from faultgate_stream.receive import decode
from faultgate_stream.receive.config import ReceiveConfig
from faultgate_stream.receive.kafka.replay import ReplayLedger
from faultgate_stream.receive.wal.config import DurabilityConfig, WalConfig
from faultgate_stream.receive.wal.segments import SegmentLog
from faultgate_stream.receive.wal.stage import WriteAheadLog
from tests.e2e.downstream import agent_run_request
from tests.live_service import make_config
from tests.peers import eventually, free_port

MiB = 1024 * 1024


def _config(wal: Path, **kw: object) -> ServiceConfig:
    base = make_config(**kw.pop("assemble", {}))  # type: ignore[arg-type]
    wal_cfg = WalConfig(dir=str(wal), checkpoint_interval=0.1, **kw)  # type: ignore[arg-type]
    return dataclasses.replace(base, durability=DurabilityConfig(wal=wal_cfg),
                               receive=dataclasses.replace(base.receive, max_request_bytes=1 * MiB))


def _export(live, req) -> None:
    with grpc.insecure_channel(live.grpc) as ch:
        trace_service_pb2_grpc.TraceServiceStub(ch).Export(req, timeout=10)


def _logged(wal: Path) -> list[bytes]:
    """What a fresh open of the log would replay (the service must have closed it)."""
    log = SegmentLog(WalConfig(dir=str(wal)), Telemetry())
    found = [log.read(e) for e in log.open().requests]
    log.close()
    return found


def test_decided_runs_are_checkpointed_and_a_clean_stop_leaves_nothing_to_replay(live_service, tmp_path):
    live = live_service(_config(tmp_path / "wal"))
    for run in range(20):
        _export(live, agent_run_request(run))
    assert live.sample("faultgate_wal_appended_bytes_total") > 20 * 500
    assert live.sample("faultgate_wal_fsync_seconds_count") >= 1
    live.sink.wait_for(20)
    eventually(lambda: live.sample("faultgate_wal_pending_requests") == 0, what="every request covered")
    live.service.shutdown(grace=1)
    assert _logged(tmp_path / "wal") == []


def test_a_start_replays_what_no_checkpoint_covers_and_counts_its_verdicts(live_service, tmp_path):
    wal = tmp_path / "wal"
    log = SegmentLog(WalConfig(dir=str(wal), fsync="always"), Telemetry())
    log.open()
    for run in range(5):   # as a crashed service left them: logged, acknowledged, never decided
        log.append(agent_run_request(100 + run).SerializeToString())
    log.close()

    live = live_service(_config(wal))
    verdicts = live.sink.wait_for(5)
    assert sorted(int(v.key.trace_id[-8:], 16) for v in verdicts) == [100, 101, 102, 103, 104]
    assert live.sample("faultgate_wal_replayed_requests_total") == 5
    assert live.sample("faultgate_wal_replayed_verdicts_total") == 5
    assert live.sample("faultgate_receiver_accepted_spans_total", transport="wal") == 25
    eventually(lambda: live.sample("faultgate_wal_pending_requests") == 0, what="the replay covered")
    # new requests after the replay are not replays
    _export(live, agent_run_request(200))
    live.sink.wait_for(6)
    time.sleep(0.3)
    assert live.sample("faultgate_wal_replayed_verdicts_total") == 5
    live.service.shutdown(grace=1)
    assert _logged(wal) == []


def test_a_request_the_assembler_refuses_is_voided_and_never_replayed(tmp_path):
    """Killed -9 after one request was taken and one refused: the log replays the first only."""
    wal, grpc_port, metrics_port = tmp_path / "wal", free_port(), free_port()
    config = tmp_path / "serve.yaml"
    config.write_text(f"""
receive: {{grpc_endpoint: "127.0.0.1:{grpc_port}", http_endpoint: "", max_request_bytes: 1MiB}}
metrics: {{endpoint: "127.0.0.1:{metrics_port}"}}
assemble: {{max_traces: 1, root_grace: 10m}}
durability: {{wal: {{dir: "{wal}"}}}}
""")
    proc = subprocess.Popen([sys.executable, "-m", "faultgate_stream.cli.main", "serve", "--config", str(config)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as ch:
            stub = trace_service_pb2_grpc.TraceServiceStub(ch)
            stub.Export(agent_run_request(1), timeout=30, wait_for_ready=True)
            with pytest.raises(grpc.RpcError) as refused:
                stub.Export(agent_run_request(2), timeout=10)   # a second trace: over max_traces
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        proc.kill()
        proc.wait(timeout=10)
    # (the request's bytes carry the time it was made: its length identifies it)
    assert [len(b) for b in _logged(wal)] == [agent_run_request(1).ByteSize()]


def test_a_full_log_refuses_retryably_with_retry_info_and_counts_it(live_service, tmp_path):
    live = live_service(_config(tmp_path / "wal", max_bytes=4 * MiB, segment_bytes=1 * MiB,
                                assemble={"root_grace": 60.0}))
    big = agent_run_request(1, tools=400)   # ~40 KB a request, none decided for a minute
    sent = 0
    with pytest.raises(grpc.RpcError) as refused:
        for run in range(1000):
            _export(live, agent_run_request(run, tools=400))
            sent += 1
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    status = rpc_status.from_call(refused.value)
    info = error_details_pb2.RetryInfo()
    assert status is not None and status.details[0].Unpack(info) and info.retry_delay.seconds >= 1
    assert "write-ahead log is full" in refused.value.details()
    assert live.sample("faultgate_receiver_refused_spans_total", transport="grpc", reason="wal_full") == 401
    assert sent * big.ByteSize() <= 4 * MiB <= (sent + 2) * big.ByteSize() + MiB
    assert live.sample("faultgate_wal_bytes") <= live.sample("faultgate_wal_max_bytes")


def test_two_services_cannot_share_one_log(live_service, tmp_path):
    live_service(_config(tmp_path / "wal"))
    config = _config(tmp_path / "wal")
    config = dataclasses.replace(config, receive=ReceiveConfig(grpc_endpoint="127.0.0.1:0", http_endpoint="",
                                                               max_request_bytes=1 * MiB))
    from faultgate_stream.model.errors import InputError
    from faultgate_stream.service import Service

    second = Service(config)
    with pytest.raises(InputError, match="in use by another process"):
        second.start()
    second.shutdown(grace=0)


@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_genai_content_from_log_records_is_logged_and_replayed_with_its_spans(live_service, tmp_path, transport):
    """Event-only runs (content in log records, sent first by the SDK's own exporters) are
    logged; a copy of the log as a crash would leave it, replayed by a second service,
    decides them as their content says: repeated_call and abstention need the content."""
    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from tests.genai_sdk import event_only_run

    first = live_service(_config(tmp_path / "wal", assemble={"root_grace": 600.0}))
    resource = Resource.create({"service.name": "weather-agent"})
    if transport == "grpc":
        spans, logs = GrpcSpanExporter(endpoint=first.grpc, insecure=True), GrpcLogExporter(endpoint=first.grpc,
                                                                                           insecure=True)
    else:
        spans, logs = (HttpSpanExporter(endpoint=f"{first.http}/v1/traces"),
                       HttpLogExporter(endpoint=f"{first.http}/v1/logs"))
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(spans, schedule_delay_millis=60_000))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(logs, schedule_delay_millis=60_000))
    tracer, logger = tracer_provider.get_tracer("t"), logger_provider.get_logger("t")
    records = event_only_run(tracer, logger, "looping", 3, "21 degrees")
    records += event_only_run(tracer, logger, "abstaining", 1, "I could not find the weather.")
    assert logger_provider.force_flush(10_000) and tracer_provider.force_flush(10_000)
    logger_provider.shutdown()
    tracer_provider.shutdown()
    assert first.sink.verdicts == []   # root_grace 10 min: nothing decided before the "crash"
    crashed = tmp_path / "after-the-crash"
    crashed.mkdir()
    for segment in (tmp_path / "wal").glob("*.wal"):   # acknowledged, so on disk: as kill -9 leaves it
        (crashed / segment.name).write_bytes(segment.read_bytes())

    second = live_service(_config(crashed))
    verdicts = {v.agent: v for v in second.sink.wait_for(2)}
    assert [r.check for r in verdicts["looping"].fired] == ["repeated_call"]
    assert [r.check for r in verdicts["abstaining"].fired] == ["abstention"]
    assert second.sample("faultgate_receiver_accepted_log_records_total", transport="wal") == records
    assert second.sample("faultgate_log_contents_total", outcome="joined") == records
    assert second.sample("faultgate_wal_replayed_verdicts_total") == 2


def test_otlp_json_logs_and_traces_are_logged_as_sent_and_replayed(live_service, tmp_path):
    """OTLP/JSON over HTTP (a recorded event-only run of the real openai-v2 instrumentation):
    the logs request is kept as its JSON body, and a replay joins its content again."""
    import urllib.request

    corpus = Path(__file__).resolve().parents[1] / "conformance" / "corpus" / "openai-v2-event_only"
    first = live_service(_config(tmp_path / "wal", assemble={"root_grace": 600.0}))
    for path, name in (("/v1/logs", "logs.json"), ("/v1/traces", "traces.json")):
        req = urllib.request.Request(first.http + path, data=(corpus / name).read_bytes(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200
    records = first.sample("faultgate_receiver_accepted_log_records_total", transport="http")
    spans = first.sample("faultgate_receiver_accepted_spans_total", transport="http")
    assert records > 0 and spans > 0 and first.sink.verdicts == []
    crashed = tmp_path / "after-the-crash"
    crashed.mkdir()
    for segment in (tmp_path / "wal").glob("*.wal"):
        (crashed / segment.name).write_bytes(segment.read_bytes())

    second = live_service(_config(crashed))
    second.sink.wait_for(1)
    assert second.sample("faultgate_receiver_accepted_log_records_total", transport="wal") == records
    assert second.sample("faultgate_receiver_accepted_spans_total", transport="wal") == spans
    assert second.sample("faultgate_log_contents_total", outcome="joined") > 0


class _Taken:
    """The stage after the log, reduced to what this test asks of it: when spans came.
    (The ordering under test is the log stage's own, whatever the next stage does with
    the spans; the real assembler behind it is what the tests above run.)"""

    def __init__(self) -> None:
        self.spans: list = []
        self.event = threading.Event()

    def consume(self, spans, request=None):
        self.spans += spans
        self.event.set()
        return len(spans)


def test_a_request_goes_on_and_is_acknowledged_only_once_its_record_is_durable(tmp_path):
    """Group commit: the call waits for the sync that covers the request's record, and only
    then are its spans handed on and the call returns (the sender's acknowledgement). The
    log runs without its sync thread here, so the test decides when the disk has synced."""
    t = Telemetry()
    taken = _Taken()
    wal = WriteAheadLog(WalConfig(dir=str(tmp_path / "wal")), taken, progress=None, telemetry=t,  # type: ignore[arg-type]
                        replays=ReplayLedger(t["faultgate_wal_replayed_verdicts"]), threads=Threads(t))
    wal.log.open()
    request, decoded = decode.Reader().protobuf(agent_run_request(7).SerializeToString())
    returned: list[object] = []
    caller = threading.Thread(target=lambda: returned.append(wal.consume(decoded.spans, request)), daemon=True)
    caller.start()
    caller.join(0.5)
    assert caller.is_alive() and returned == [], "acknowledged before its record was durable"
    assert not taken.event.is_set(), "handed on before its record was durable"
    assert wal.pending_requests == 0   # nor given to the tracker: no checkpoint can cover it yet
    assert wal.log.sync()
    caller.join(10)
    assert returned == [len(decoded.spans)]
    assert taken.spans == decoded.spans
    assert wal.pending_requests == 1
    wal.log.close()
    assert [len(b) for b in _logged(tmp_path / "wal")] == [len(request.body)]
