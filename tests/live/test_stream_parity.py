"""Stream parity: every OTLP corpus file replayed over gRPC, and over HTTP (protobuf and
JSON), gives the verdicts of the offline ``check``."""
from __future__ import annotations

import pytest

from faultgate_stream.checks.registry import select
from faultgate_stream.cli.replay import GrpcSender, HttpSender, replay
from faultgate_stream.pipeline import check_spans
from faultgate_stream.read.files import read_file
from tests.conftest import CORPUS

OTLP_FILES = ["examples/traces.json", "examples/gate/baseline_glm_run1.json", "examples/gate/baseline_glm_run2.json",
              "examples/gate/candidate_gpt.json", "examples/gate/candidate_qwen.json",
              "examples/formats/openinference.json", "tests/fixtures/retail_gaps.json"]


def _verdicts_key(verdicts):
    return {(str(v.key), r.check): (r.fired, r.reason) for v in verdicts for r in v.results}


def _offline():
    paths = [CORPUS / "faultgate-0.4.1" / f for f in OTLP_FILES]
    spans = [read_file(p)[1] for p in paths]
    ids = [s.trace_id for batch in spans for s in batch]
    trace_ids = {s.trace_id for batch in spans for s in batch}
    per_file = [{s.trace_id for s in batch} for batch in spans]
    assert sum(len(x) for x in per_file) == len(trace_ids), "files must not share trace ids"
    assert ids
    return [str(p) for p in paths], check_spans(spans, select())


@pytest.mark.parametrize("protocol", ["grpc", "http-protobuf", "http-json"])
def test_replayed_corpus_gives_the_offline_verdicts(live_service, protocol):
    paths, offline = _offline()
    # Parity, not timing, is under test: a root grace long enough that a loaded machine
    # (CI beside other jobs) cannot decide a run between two of its batches.
    live = live_service(root_grace=2.0)
    sender = GrpcSender(live.grpc) if protocol == "grpc" else HttpSender(live.http, protocol.split("-")[1])
    try:
        tally = replay(paths, sender, batch=200)
    finally:
        sender.close()
    assert tally.rejected == 0
    streamed = live.sink.wait_for(len(offline))
    assert all(v.completion.value == "grace" for v in streamed)
    assert _verdicts_key(streamed) == _verdicts_key(offline)
    assert live.sample("faultgate_receiver_accepted_spans_total") == tally.spans
    fired = sum(r.fired for v in offline for r in v.results)
    assert live.sample("faultgate_check_fired_total") == fired
