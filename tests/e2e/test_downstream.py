"""Verdicts downstream: a real collector behind faultgate-stream receives every span, the
roots carrying their verdict, plus the evaluation events and log records."""
from __future__ import annotations

import dataclasses

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.registry import select
from faultgate_stream.cli.replay import GrpcSender, replay
from faultgate_stream.export.spans.config import SpansExportConfig
from faultgate_stream.pipeline import check_spans
from faultgate_stream.read.files import read_file
from faultgate_stream.verdict.ruleset import Binding, Ruleset
from tests.conftest import CORPUS
from tests.e2e.downstream import agent_run_request, attrs, downstream_config, read_logs, read_spans, span_keys
from tests.live_service import make_config
from tests.peers import eventually, free_port, running_collector

FILES = [CORPUS / "faultgate-0.4.1" / f for f in
         ("examples/traces.json", "tests/fixtures/retail_gaps.json", "examples/gate/candidate_gpt.json")]


def _export_config(port: int, **kw) -> SpansExportConfig:
    return SpansExportConfig(endpoint=f"127.0.0.1:{port}", logs_endpoint=f"127.0.0.1:{port}",
                             retry_initial_interval=0.2, retry_max_interval=1.0, **kw)


def test_every_span_arrives_downstream_and_roots_carry_their_verdict(live_service, tmp_path):
    offline = check_spans([read_file(p)[1] for p in FILES], select())
    port, out = free_port(), tmp_path / "out"
    out.mkdir()
    with running_collector(downstream_config(port, out), tmp_path):
        live = live_service(dataclasses.replace(make_config(), export=_export_config(port)))
        sender = GrpcSender(live.grpc)
        try:
            tally = replay([str(p) for p in FILES], sender, batch=300)
        finally:
            sender.close()
        live.sink.wait_for(len(offline))
        eventually(lambda: live.sample("faultgate_exporter_sent_spans_total") == tally.spans, timeout=30,
                   what="every span sent downstream")
        spans = eventually(lambda: (s := read_spans(out)) and len(s) >= tally.spans and s, timeout=30,
                           what="the file exporter to write every span")
        logs = eventually(lambda: (r := read_logs(out)) and len(r) >= len(offline) * 6 and r, timeout=30,
                          what="evaluation log records")
    assert len(spans) == tally.spans
    assert len({(s["traceId"], s["spanId"]) for s in spans}) == tally.spans
    by_id = {(s["traceId"], s["spanId"]): s for s in spans}
    for v in offline:
        root = by_id[(v.key.trace_id, v.key.root_span_id)]
        a = attrs(root)
        assert a["faultgate.verdict"] == ("clean" if v.clean else "failed")
        assert a["faultgate.completion"] == "grace"
        assert sorted(a["faultgate.checks.fired"] or []) == sorted(r.check for r in v.fired)
        for r in v.fired:
            assert f"faultgate.reason.{r.check}" in a
        events = [attrs(e) for e in root.get("events", []) if e["name"] == "gen_ai.evaluation.result"]
        assert {e["gen_ai.evaluation.name"]: e["gen_ai.evaluation.score.label"] for e in events} == {
            r.check: ("fail" if r.fired else "pass") for r in v.results}
    children = [s for s in spans if (s["traceId"], s["spanId"]) not in
                {(v.key.trace_id, v.key.root_span_id) for v in offline}]
    assert all("faultgate.verdict" not in attrs(s) for s in children)
    assert len(logs) == sum(len(v.results) for v in offline)
    roots = {(v.key.trace_id, v.key.root_span_id) for v in offline}
    assert {(rec["traceId"], rec["spanId"]) for rec in logs} == roots
    assert live.sample("faultgate_exporter_queue_spans") == 0
    assert live.sample("faultgate_receiver_accepted_spans_total") == live.sample("faultgate_exporter_sent_spans_total")


def test_verdict_only_forwards_annotated_roots_and_strip_content_removes_messages(live_service, tmp_path):
    port, out = free_port(), tmp_path / "out"
    out.mkdir()
    files = [FILES[0]]
    offline = check_spans([read_file(p)[1] for p in files], select())
    with running_collector(downstream_config(port, out), tmp_path):
        live = live_service(dataclasses.replace(make_config(), export=_export_config(
            port, mode="verdict_only", strip_content=True)))
        sender = GrpcSender(live.grpc)
        try:
            tally = replay([str(p) for p in files], sender)
        finally:
            sender.close()
        live.sink.wait_for(len(offline))
        spans = eventually(lambda: (s := read_spans(out)) and len(s) >= len(offline) and s, timeout=30,
                           what="the roots downstream")
    assert {(s["traceId"], s["spanId"]) for s in spans} == {(v.key.trace_id, v.key.root_span_id) for v in offline}
    for s in spans:
        a = attrs(s)
        assert "gen_ai.input.messages" not in a and "gen_ai.output.messages" not in a
        assert a["faultgate.verdict"] in ("clean", "failed")
    assert live.sample("faultgate_exporter_filtered_spans_total") == tally.spans - len(offline)
    assert live.sample("faultgate_exporter_sent_spans_total") == len(offline)


def test_the_http_exporter_delivers_spans_and_log_records_too(live_service, tmp_path):
    port, out = free_port(), tmp_path / "out"
    out.mkdir()
    config = downstream_config(free_port(), out).replace(
        "      grpc:", f"      http:\n        endpoint: \"127.0.0.1:{port}\"\n      grpc:")
    with running_collector(config, tmp_path):
        live = live_service(dataclasses.replace(make_config(), export=SpansExportConfig(
            endpoint=f"http://127.0.0.1:{port}", logs_endpoint=f"http://127.0.0.1:{port}", protocol="http",
            retry_initial_interval=0.2, retry_max_interval=1.0)))
        sender = GrpcSender(live.grpc)
        try:
            tally = replay([str(FILES[0])], sender)
        finally:
            sender.close()
        live.sink.wait_for(5)
        spans = eventually(lambda: (s := read_spans(out)) and len(s) >= tally.spans and s, timeout=30,
                           what="every span over OTLP/HTTP")
        logs = eventually(lambda: (r := read_logs(out)) and len(r) >= 30 and r, timeout=30, what="log records")
    assert len(spans) == tally.spans and len(logs) == 30  # 5 runs x 6 checks


def test_a_root_retried_after_its_verdict_goes_out_at_once_carrying_that_verdict(live_service, tmp_path):
    from tests.live.test_receivers import _request, _span, _stub

    port, out = free_port(), tmp_path / "out"
    out.mkdir()
    with running_collector(downstream_config(port, out), tmp_path):
        live = live_service(dataclasses.replace(make_config(root_grace=0.2), export=_export_config(port)))
        channel, stub = _stub(live)
        request = _request(_span(21, 1, gen_ai__operation__name="invoke_agent", gen_ai__agent__name="a"))
        stub.Export(request, timeout=5)
        live.sink.wait_for(1)
        stub.Export(request, timeout=5)  # an upstream retry whose first answer was lost
        channel.close()
        spans = eventually(lambda: (s := read_spans(out)) and len(s) >= 2 and s, timeout=30, what="both copies")
    assert [attrs(s)["faultgate.verdict"] for s in spans] == ["clean", "clean"]
    assert live.sample("faultgate_exporter_held_spans") == 0
    assert live.sample("faultgate_exporter_queue_spans") == 0


class _ReturnsNothing(Check):
    name = "returns_nothing"
    description = "a bound check whose finish forgets to return its result (a bug)"

    def finish(self, state, run):
        return None


def test_a_run_whose_verdict_cannot_be_worked_out_still_sends_its_root_downstream_marked_undecided(
        live_service, tmp_path):
    """A bug outside every check's ``finish`` used to leave the completion scan: the run got
    no verdict and its held root never left, its room in the export queue never given back."""
    port, out = free_port(), tmp_path / "out"
    out.mkdir()
    with running_collector(downstream_config(port, out), tmp_path):
        live = live_service(dataclasses.replace(make_config(root_grace=0.2), export=_export_config(port)))
        checks = tuple(select())
        # rules as a reload would swap them in: a binding for the runs' agent with the bug
        live.service.evaluator.reload(Ruleset(checks, (Binding(("steady",), (_ReturnsNothing(),)),)))
        channel = grpc.insecure_channel(live.grpc)
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        sent = set()
        for run in range(1, 4):
            req = agent_run_request(run)
            sent |= span_keys(req)
            stub.Export(req, timeout=5)
        channel.close()
        verdicts = live.sink.wait_for(3)
        spans = eventually(lambda: (s := read_spans(out)) and len(s) >= len(sent) and s, timeout=30,
                           what="every span downstream, the held roots too")
    assert {(s["traceId"], s["spanId"]) for s in spans} == sent and len(spans) == len(sent)
    roots = [attrs(s) for s in spans if s["name"] == "invoke_agent steady"]
    assert len(roots) == 3 and all(a["faultgate.verdict"] == "undecided" for a in roots)
    assert all(v.verdict == "undecided" and all(r.undecided for r in v.results) for v in verdicts)
    assert live.sample("faultgate_internal_errors_total", stage="verdict_evaluate") == 3
    assert live.sample("faultgate_exporter_queue_spans") == 0
    assert live.sample("faultgate_receiver_accepted_spans_total") == live.sample("faultgate_exporter_sent_spans_total")
