"""Stream parity: every OTLP corpus file replayed over gRPC, and over HTTP (protobuf and
JSON), gives the verdicts of the offline ``check``."""
from __future__ import annotations

import pytest

import dataclasses

from faultgate_stream.checks.config import ChecksConfig
from faultgate_stream.checks.registry import select
from faultgate_stream.cli.replay import GrpcSender, HttpSender, replay
from faultgate_stream.pipeline import check_spans
from faultgate_stream.read.files import read_file
from faultgate_stream.verdict.ruleset import own_checks
from tests.conftest import CORPUS, ROOT
from tests.live_service import make_config

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


RETAIL = ROOT / "examples" / "traces" / "retail_gaps.json"
RULES = ROOT / "examples" / "plugins" / "rules.yaml"


def test_replayed_corpus_gives_the_offline_verdicts_of_plugins_and_rules(live_service):
    """A plug-in and a rules file, live over gRPC in small batches, judge as offline."""
    _, spans = read_file(RETAIL)
    plugins = ("tests.checks.hostile_plugins:StepCount", "tests.checks.hostile_plugins:Noop")
    offline = check_spans([spans], select() + own_checks(plugins, str(RULES)))
    live = live_service(dataclasses.replace(make_config(root_grace=2.0),
                                            checks=ChecksConfig(plugins=plugins, rules=str(RULES))))
    sender = GrpcSender(live.grpc)
    try:
        replay([str(RETAIL)], sender, batch=7)
    finally:
        sender.close()
    streamed = live.sink.wait_for(len(offline))
    names = {r.check for v in offline for r in v.results}
    assert _verdicts_of(streamed, names) == _verdicts_of(offline, names)
    # evaluator identity and the spans a result points at travel with it
    mine = [r for v in streamed for r in v.results if r.check == "step_count"]
    assert all(r.evaluator == "tests.checks.hostile_plugins:StepCount 2.1" for r in mine)
    assert sum(live.sample("faultgate_check_fired_total", check=c) for c in ("step_count", "user_lookup_failed")) \
        == sum(r.fired for v in offline for r in v.results if r.check in ("step_count", "user_lookup_failed"))


def _verdicts_of(verdicts, names):
    return {(str(v.key), r.check): (r.fired, r.undecided, r.reason) for v in verdicts for r in v.results
            if r.check in names}
