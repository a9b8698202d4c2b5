"""The metric catalog is the interface: docs are generated from it, and a running service
exposes exactly what it declares."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from faultgate_stream.export.spans.config import SpansExportConfig
from faultgate_stream.gate.config import GateBandConfig, GateConfig
from faultgate_stream.model.telemetry import CATALOG, reference_markdown
from faultgate_stream.receive.kafka.config import KafkaConfig
from tests.conftest import CORPUS
from tests.live_service import make_config

ROOT = Path(__file__).resolve().parents[1]


def test_docs_metrics_md_is_generated_from_the_catalog():
    assert (ROOT / "docs" / "metrics.md").read_text() == reference_markdown(), \
        "regenerate: python -m faultgate_stream.model.telemetry > docs/metrics.md"


def test_a_running_service_exposes_every_declared_metric_and_nothing_undeclared(live_service):
    # span export on (to a port nothing listens on: nothing is sent in this test), the gate,
    # and the Kafka source (brokers nothing listens on: its gauges exist from the start)
    band = CORPUS / "faultgate-0.4.1" / "examples" / "gate" / "band.json"
    cfg = make_config()
    live = live_service(dataclasses.replace(cfg, export=SpansExportConfig(endpoint="127.0.0.1:9"),
                                            gate=GateConfig(bands=(GateBandConfig(band=str(band)),)),
                                            receive=dataclasses.replace(cfg.receive,
                                                                        kafka=KafkaConfig(brokers="127.0.0.1:9"))))
    families = set(re.findall(r"^# TYPE (faultgate_\w+) ", live.metrics(), re.M))
    declared = {s.name for s in CATALOG}
    assert families == declared
