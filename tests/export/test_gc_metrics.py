"""Garbage collections and their pauses reach the service's metrics, by generation: what a
soak reads to see whether long-lived state makes full collections longer with age."""
from __future__ import annotations

import gc

from prometheus_client import CollectorRegistry

from faultgate_stream.export.metrics import runtime


def test_a_full_collection_is_counted_with_its_pause():
    registry = CollectorRegistry()
    runtime.register(registry)

    def sample(name: str) -> float:
        return registry.get_sample_value(name, {"generation": "2"}) or 0.0

    before = sample("faultgate_gc_collections_total"), sample("faultgate_gc_pause_seconds_total")
    gc.collect()
    assert sample("faultgate_gc_collections_total") == before[0] + 1
    assert sample("faultgate_gc_pause_seconds_total") > before[1]
