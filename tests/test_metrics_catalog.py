"""The metric catalog is the interface: docs are generated from it, and a running service
exposes exactly what it declares."""
from __future__ import annotations

import dataclasses
import itertools
import re
from pathlib import Path

from faultgate_stream import __version__
from faultgate_stream.export.spans.config import SpansExportConfig
from faultgate_stream.gate.config import GateBandConfig, GateConfig
from faultgate_stream.model.telemetry import CATALOG, delay_buckets, exposed_name, reference_markdown
from faultgate_stream.receive.kafka.config import KafkaConfig
from faultgate_stream.receive.wal.config import DurabilityConfig, WalConfig
from faultgate_stream.sessions.config import SessionsConfig
from tests.conftest import CORPUS
from tests.live_service import make_config

ROOT = Path(__file__).resolve().parents[1]


def test_docs_metrics_md_is_generated_from_the_catalog():
    assert (ROOT / "docs" / "metrics.md").read_text() == reference_markdown(), \
        "regenerate: python -m faultgate_stream.model.telemetry > docs/metrics.md"


def test_a_running_service_exposes_every_declared_metric_and_nothing_undeclared(live_service, tmp_path):
    # span export on (to a port nothing listens on: nothing is sent in this test), the gate,
    # the Kafka source (brokers nothing listens on: its gauges exist from the start), sessions
    # and the write-ahead log
    band = CORPUS / "faultgate-0.4.1" / "examples" / "gate" / "band.json"
    cfg = make_config()
    live = live_service(dataclasses.replace(cfg, export=SpansExportConfig(endpoint="127.0.0.1:9"),
                                            gate=GateConfig(bands=(GateBandConfig(band=str(band)),)),
                                            sessions=SessionsConfig(enabled=True),
                                            receive=dataclasses.replace(cfg.receive, max_request_bytes=1 << 20,
                                                                        kafka=KafkaConfig(brokers="127.0.0.1:9")),
                                            durability=DurabilityConfig(wal=WalConfig(dir=str(tmp_path / "wal")))))
    families = set(re.findall(r"^# TYPE (faultgate_\w+) ", live.metrics(), re.M))
    declared = {s.name for s in CATALOG}
    assert families == declared


def _families(text: str) -> set[str]:
    return set(re.findall(r"^# TYPE (\w+) ", text, re.M))


def test_every_error_counter_is_at_zero_for_each_known_label_combination_from_the_start(live_service):
    live = live_service(dataclasses.replace(make_config(), export=SpansExportConfig(endpoint="127.0.0.1:9")))
    text = live.metrics()
    checked = 0
    for spec in CATALOG:
        known = spec.known
        if spec.kind != "counter" or not spec.labels or not all(label in known for label in spec.labels):
            continue
        for combination in itertools.product(*(known[label] for label in spec.labels)):
            selector = ",".join(f'{k}="{v}"' for k, v in sorted(zip(spec.labels, combination)))
            assert re.search(rf"^{exposed_name(spec)}\{{{re.escape(selector)}\}} 0\.0$", text, re.M), \
                f"{exposed_name(spec)}{{{selector}}} is not exposed at 0 before any traffic"
            checked += 1
    assert checked > 50  # the receiver, exporter, reload and stream counters, every combination


# The literals the code records as a metric's reason, by the shape of the call that records
# them; a reason added in code but not in the catalog (so not in docs/metrics.md, and not at
# zero from the start) fails here.
_RECORDED_REASONS = (
    (r'bound="(\w+)"', "faultgate_receiver_refused_spans"),
    (r'Refusal\(grpc\.StatusCode\.\w+, \d+, [^,]+, "(\w+)"', None),
    (r'rejected_request\("(\w+)"\)', "faultgate_receiver_rejected_requests"),
    (r'_failed\(kind, [^)]*"(\w+)"\)', "faultgate_exporter_failed_spans"),
    (r'faultgate_exporter_failed_log_records"\]\.labels\("(\w+)"\)', "faultgate_exporter_failed_log_records"),
    (r'reason="(\w+)"', "faultgate_exporter_failed_spans"),
    (r'return "(max_\w+)"', "faultgate_receiver_refused_spans"),
    (r'"(\w+)" if self\._abort\.is_set\(\) else \("(\w+)"', "faultgate_exporter_failed_spans"),
    (r'tally\.fail\("(\w+)"', "faultgate_exporter_failed_spans"),
    (r'failed=\{"(\w+)"', "faultgate_exporter_failed_spans"),
    (r'release\([^)]*failed="(\w+)"\)', "faultgate_exporter_failed_spans"),
)


def test_every_reason_the_code_records_is_listed_in_the_catalog():
    known = {s.name: set(s.known.get("reason", ())) for s in CATALOG}
    receiver = known["faultgate_receiver_refused_spans"] | known["faultgate_receiver_rejected_spans"] \
        | known["faultgate_receiver_rejected_requests"]
    seen = 0
    for path in (ROOT / "faultgate_stream").rglob("*.py"):
        text = path.read_text()
        for pattern, metric in _RECORDED_REASONS:
            for match in re.finditer(pattern, text):
                for reason in match.groups():
                    if reason == "connection":  # a retryable export error: counted as retries_exhausted
                        continue
                    allowed = receiver if metric is None else known[metric]
                    assert reason in allowed, f"{path.name}: reason {reason!r} is not in the catalog of {metric}"
                    seen += 1
    assert seen >= 10
    # a downstream's permanent gRPC status is recorded by its code's name
    import grpc

    from faultgate_stream.export.spans.sender import RETRYABLE_GRPC
    permanent = {c.name.lower() for c in grpc.StatusCode} - {c.name.lower() for c in RETRYABLE_GRPC} - {"ok"}
    assert permanent <= known["faultgate_exporter_failed_spans"]


def test_verdict_delay_buckets_are_fine_around_root_grace():
    for grace in (0.3, 2.0, 10.0):
        buckets = delay_buckets(grace)
        assert list(buckets) == sorted(set(buckets))
        near = [b for b in buckets if grace <= b <= grace + 0.1]
        assert len(near) >= 4 and grace in buckets  # grace itself, then steps of tens of ms
        assert any(b < grace for b in buckets) and buckets[-1] >= grace + 60


def test_the_service_uses_buckets_for_its_own_root_grace_and_shows_its_bounds_and_build(live_service):
    live = live_service(dataclasses.replace(make_config(max_traces=123, max_bytes=4567),
                                            export=SpansExportConfig(endpoint="127.0.0.1:9", queue_spans=890)))
    text = live.metrics()
    hist = live.service.telemetry["faultgate_verdict_delay_seconds"]
    assert tuple(hist.upper_bounds[:-1]) == delay_buckets(0.3)
    assert live.sample("faultgate_runs_in_memory_limit") == 123
    assert live.sample("faultgate_memory_limit_bytes") == 4567
    assert live.sample("faultgate_exporter_queue_capacity_spans") == 890
    assert re.search(rf'^faultgate_build_info{{python="[\d.]+",version="{re.escape(__version__)}"}} 1\.0$', text, re.M)
    # prometheus_client's process and platform collectors, on the service's own registry
    assert {"process_cpu_seconds", "process_resident_memory_bytes", "process_open_fds", "python_info"} <= _families(text)
