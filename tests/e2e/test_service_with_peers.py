"""faultgate-stream between real peers: a real OpenTelemetry Collector in front of it, and
a real Prometheus scraping it."""
from __future__ import annotations

import dataclasses
import time
from collections import Counter

from faultgate_stream.checks.registry import select
from faultgate_stream.cli.replay import GrpcSender, replay
from faultgate_stream.export.metrics.config import MetricsConfig
from faultgate_stream.pipeline import check_spans
from faultgate_stream.read.files import read_file
from faultgate_stream.receive.config import ReceiveConfig
from tests.conftest import CORPUS
from tests.live_service import make_config
from tests.peers import eventually, forwarding_collector_config, free_port, running_collector, running_prometheus

FILES = [CORPUS / "faultgate-0.4.1" / f for f in
         ("examples/traces.json", "tests/fixtures/retail_gaps.json", "examples/gate/candidate_qwen.json")]


def _offline():
    return check_spans([read_file(p)[1] for p in FILES], select())


def _key(verdicts):
    return {(str(v.key), r.check): (r.fired, r.reason) for v in verdicts for r in v.results}


def test_a_collector_in_front_gives_the_verdicts_of_a_direct_replay(live_service, tmp_path):
    offline = _offline()
    live = live_service()
    inbound = free_port()
    config = forwarding_collector_config(inbound, live.grpc)
    with running_collector(config, tmp_path):
        sender = GrpcSender(f"127.0.0.1:{inbound}")
        try:
            tally = replay([str(p) for p in FILES], sender, batch=100)
        finally:
            sender.close()
        streamed = live.sink.wait_for(len(offline), timeout=60)
    assert _key(streamed) == _key(offline)
    assert live.sample("faultgate_receiver_accepted_spans_total", transport="grpc") == tally.spans


def test_prometheus_scrapes_the_offline_counts_and_the_exemplars(live_service, tmp_path):
    offline = _offline()
    metrics_port = free_port()
    cfg = make_config()
    live = live_service(dataclasses.replace(cfg, metrics=MetricsConfig(endpoint=f"127.0.0.1:{metrics_port}"),
                                            receive=ReceiveConfig(grpc_endpoint="127.0.0.1:0", http_endpoint="")))
    started = time.time()
    sender = GrpcSender(live.grpc)
    try:
        replay([str(p) for p in FILES], sender)
    finally:
        sender.close()
    live.sink.wait_for(len(offline))
    expected = Counter(r.check for v in offline for r in v.fired)
    with running_prometheus([f"127.0.0.1:{metrics_port}"], tmp_path) as prom:
        def counts():
            rows = prom.query("sum by (check) (faultgate_check_fired_total)")
            got = {row["metric"]["check"]: int(float(row["value"][1])) for row in rows}
            return got if got == dict(expected) else None

        eventually(counts, timeout=30, what=lambda: f"PromQL counts {prom.query('sum by (check) (faultgate_check_fired_total)')} vs {dict(expected)}")
        failed = {v.key.trace_id for v in offline if not v.clean}
        series = eventually(lambda: prom.exemplars("faultgate_runs_total", started - 60, time.time() + 60),
                            timeout=30, what="exemplars of faultgate_runs_total")
        trace_ids = {e["labels"]["trace_id"] for s in series for e in s["exemplars"]}
        assert trace_ids and trace_ids <= {v.key.trace_id for v in offline}
        failed_series = [s for s in series if s["seriesLabels"].get("verdict") == "failed"]
        assert {e["labels"]["trace_id"] for s in failed_series for e in s["exemplars"]} <= failed
