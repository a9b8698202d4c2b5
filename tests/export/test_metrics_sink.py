"""The metrics sink exposes what it exposed when every series was a ``prometheus_client``
child (``metrics_sink_oracle.py``): the same families, samples, values, ``_created`` series
and exemplars, in Prometheus' text format and in OpenMetrics, for any sequence of verdicts
and early findings, with agent names folded and cut at the same bounds; and it refuses what
the oracle refused, at the same point."""
from __future__ import annotations

from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

from faultgate_stream.export.metrics.sink import MetricsSink
from faultgate_stream.model.series import CounterSeries, HistogramSeries
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.model.verdict import EarlyFinding
from faultgate_stream.verdict.redact import get_redactor
from tests.export.metrics_sink_oracle import OracleMetricsSink, OracleTelemetry
from tests.export.verdicts import verdicts

NOW = 1_700_000_000.25

# a trace id too long for an exemplar (OpenMetrics' 128 characters): refused, as before
_trace_ids = st.sampled_from(["0af7651916cd43dd8448eb211c80319c", "00000000000000000000000000000001",
                              "f" * 120])
_early = st.builds(EarlyFinding, _trace_ids, st.sampled_from(["b7ad6b7169203331", "aa"]),
                   st.sampled_from(["policy", "loop"]), st.just("r"), st.sampled_from(["", "shop", "x" * 90]))
_events = st.lists(st.one_of(verdicts(_trace_ids), _early), max_size=25)


def _fed(sink, events) -> list[str | None]:
    out = []
    for e in events:
        try:
            (sink.early if isinstance(e, EarlyFinding) else sink.verdict)(e)
            out.append(None)
        except Exception as err:  # noqa: BLE001 (the fan-out logs and counts a sink that raises)
            out.append(f"{type(err).__name__}: {err}")
    return out


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(_events, st.sampled_from([1, 2, 100]), st.sampled_from([16, 64, 128]), st.booleans())
def test_any_sequence_of_verdicts_is_exposed_as_the_prometheus_client_children_exposed_it(
        events, max_agents, max_label_length, masked):
    redact = get_redactor("builtin") if masked else None
    with mock.patch("time.time", lambda: NOW):
        new, old = Telemetry(root_grace=0.5), OracleTelemetry(root_grace=0.5)
        assert _fed(MetricsSink(new, max_agents, max_label_length, redact), events) == \
            _fed(OracleMetricsSink(old, max_agents, max_label_length, redact), events)
        assert generate_latest(new.registry) == generate_latest(old.registry)
        assert generate_openmetrics(new.registry) == generate_openmetrics(old.registry)


def test_the_per_verdict_series_are_plain_values_and_the_rest_prometheus_client_children():
    t = Telemetry()
    assert isinstance(t["faultgate_runs"], CounterSeries) and isinstance(t["faultgate_run_steps"], HistogramSeries)
    assert type(t["faultgate_receiver_accepted_spans"]).__name__ == "Counter"
