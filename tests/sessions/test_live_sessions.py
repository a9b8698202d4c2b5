"""Sessions live: an agent instrumented with the OpenTelemetry SDK sends conversations of
several runs over OTLP/gRPC to the real service; each session is decided when a run says
it ended, or when it has been idle for ``sessions.idle_timeout``, and its verdict reaches
every sink (the test's, the metrics, the verdict stream). The same spans, as the SDK
encoded them, checked offline with ``check --sessions``, give the same sessions with the
same runs and the same results.

Each conversation's next run starts after the previous one's verdict, as a user's next
message follows the agent's answer (a run of an ended session that arrived after its end
would start a session of its own; README, Sessions)."""
from __future__ import annotations

import dataclasses
import json
import time

import grpc
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from faultgate_stream.cli.main import main
from faultgate_stream.export.stream.client import VerdictServiceStub
from faultgate_stream.export.stream.gen.verdict_pb2 import SubscribeRequest
from faultgate_stream.sessions.config import SessionsConfig
from tests.live_service import make_config
from tests.peers import eventually

IDLE_S = 3.0
SESSIONS = SessionsConfig(enabled=True, idle_timeout=IDLE_S, max_tokens_per_session=5000.0,
                          monotonic=("order.stage",))


class _Agent:
    """Runs as an instrumented agent makes them: the SDK's batching gRPC exporter to the
    service, and an in-memory copy of every span for the offline check."""

    def __init__(self, target: str) -> None:
        self.provider = TracerProvider(resource=Resource.create({"service.name": "support-app"}))
        self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=target, insecure=True),
                                                            schedule_delay_millis=50))
        self.memory = InMemorySpanExporter()
        self.provider.add_span_processor(SimpleSpanProcessor(self.memory))
        self.tracer = self.provider.get_tracer("support")

    def run(self, session: str | None, prompt: str, *, tokens: int = 1000, end: bool = False,
            stage: int | None = None) -> None:
        attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support",
                 "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": prompt}]}]),
                 "gen_ai.output.messages": json.dumps([{"role": "assistant",
                                                        "parts": [{"type": "text", "content": f"Re: {prompt}"}]}]),
                 "gen_ai.usage.input_tokens": tokens // 2, "gen_ai.usage.output_tokens": tokens - tokens // 2}
        if session is not None:
            attrs["session.id"] = session
        if end:
            attrs["faultgate.session.end"] = True
        if stage is not None:
            attrs["order.stage"] = stage
        with self.tracer.start_as_current_span("invoke_agent support", attributes=attrs):
            with self.tracer.start_as_current_span("execute_tool lookup_order", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_order",
                    "gen_ai.tool.call.arguments": json.dumps({"q": prompt}), "gen_ai.tool.call.result": "{}"}):
                pass
        assert self.provider.force_flush(10_000)

    def write(self, path) -> None:
        path.write_bytes(encode_spans(self.memory.get_finished_spans()).SerializeToString())


def _summary(sessions) -> list[tuple]:
    """What must agree live and offline: the session, its runs (by trace), its verdict and
    every result with its reason."""
    return sorted((s.session_id, tuple(k.trace_id for k in s.runs), s.verdict,
                   tuple((r.check, r.fired, r.undecided, r.reason) for r in s.results)) for s in sessions)


def test_sessions_across_runs_are_decided_live_and_offline_alike(live_service, tmp_path):
    cfg = dataclasses.replace(make_config(), sessions=SESSIONS)
    live = live_service(cfg)
    channel = grpc.insecure_channel(live.grpc)
    stream = VerdictServiceStub(channel).Subscribe(SubscribeRequest(sessions=True))
    eventually(lambda: live.service.stream.subscribers() == 1, what="the subscriber registered")
    agent = _Agent(live.grpc)
    runs = 0

    def send(*args, **kw) -> None:
        nonlocal runs
        agent.run(*args, **kw)
        runs += 1
        live.sink.wait_for(runs)

    # A: three runs over the token budget, ended by its last run
    send("A", "Where is order 1?", tokens=2000, stage=1)
    send("A", "And order 2?", tokens=2000, stage=1)
    send("A", "Thanks, bye.", tokens=2000, stage=2, end=True)
    # C: the same question again after it was answered
    send("C", "Cancel order 7", stage=1)
    send("C", "cancel   ORDER 7", stage=1, end=True)
    # D: a stage that must only go up goes down
    send("D", "Start a return", stage=1)
    send("D", "Ship the label", stage=3)
    send("D", "Where is my refund?", stage=2, end=True)
    # no session: in none, counted
    send(None, "One-off question")
    # B: two runs, then nothing until it is idle; then a run of the same id is a new session
    send("B", "Hello", stage=1)
    send("B", "Opening hours?", stage=1)
    idle = live.sink.wait_for_sessions(4, timeout=IDLE_S * 4)[3]
    assert (idle.session_id, idle.end.value, len(idle.runs)) == ("B", "idle", 2)
    time.sleep(0.2)
    send("B", "One more thing", stage=2, end=True)
    sessions = live.sink.wait_for_sessions(5)
    agent.provider.shutdown()

    by_id = {s.session_id: s for s in sessions[:3]}
    assert [s.end.value for s in sessions] == ["ended", "ended", "ended", "idle", "ended"]
    assert [r.check for r in by_id["A"].fired] == ["session.token_budget"]
    assert by_id["A"].fired[0].reason == "session 'A' used 6000 tokens over 3 run(s) > max 5000"
    assert [r.check for r in by_id["C"].fired] == ["session.repeated_task"]
    assert [r.check for r in by_id["D"].fired] == ["session.monotonic"]
    assert by_id["D"].fired[0].reason.startswith("order.stage went down from 3 (run 2) to 2 (run 3, ")
    assert [s.verdict for s in sessions[3:]] == ["clean", "clean"]
    # every sink heard of them: metrics, and the stream's subscriber that asked for sessions
    assert live.sample("faultgate_session_verdicts_total", agent="support", verdict="failed") == 3
    assert live.sample("faultgate_session_verdicts_total", agent="support", verdict="clean", end="idle") == 1
    assert live.sample("faultgate_session_check_fired_total", check="session.repeated_task") == 1
    assert live.sample("faultgate_session_runs_without_id_total") == 1
    assert live.sample("faultgate_sessions_open") == 0
    streamed = []
    for msg in stream:
        if msg.HasField("session"):
            streamed.append(msg.session)
        if len(streamed) == 5:
            break
    stream.cancel()
    channel.close()
    assert [m.session_id for m in streamed] == [s.session_id for s in sessions]
    assert streamed[0].has_tokens and streamed[0].tokens == 6000 and len(streamed[0].run_ids) == 3

    # offline: the same spans, as the SDK encoded them
    spans, config, report = tmp_path / "spans.pb", tmp_path / "sessions.yaml", tmp_path / "report.json"
    agent.write(spans)
    config.write_text(json.dumps({"sessions": {"idle_timeout": f"{IDLE_S}s", "max_tokens_per_session": 5000,
                                               "monotonic": ["order.stage"]}}))
    assert main(["check", str(spans), "--sessions", str(config), "--redact", "off", "--json", str(report)]) == 1
    offline = json.loads(report.read_text())["sessions"]
    assert [s["end"] for s in offline] == ["ended", "ended", "ended", "idle", "ended"]
    as_live = sorted((s["session_id"], tuple(r.split("/")[0] for r in s["runs"]), s["verdict"],
                      tuple((r["check"], r["fired"], r["undecided"], r["reason"]) for r in s["results"]))
                     for s in offline)
    assert as_live == _summary(sessions)


def test_an_open_session_is_decided_as_shutdown_when_the_service_stops(live_service):
    live = live_service(dataclasses.replace(make_config(), sessions=SESSIONS))
    agent = _Agent(live.grpc)
    agent.run("X", "Still there?", tokens=6000)
    live.sink.wait_for(1)
    agent.provider.shutdown()
    assert live.sink.sessions == []
    out = live.service.shutdown(grace=1)
    (s,) = live.sink.sessions
    assert (s.session_id, s.end.value, s.verdict, out["sessions_decided_at_shutdown"]) == ("X", "shutdown", "failed", 1)
