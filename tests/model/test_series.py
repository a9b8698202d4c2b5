"""A series kept as plain values is exposed as the ``prometheus_client`` metric it replaces:
same samples, labels, values, ``_created`` series and exemplars, in both formats, whatever
is recorded (NaN and infinities included), and it refuses what that metric refuses."""
from __future__ import annotations

import math
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

from faultgate_stream.model.series import CounterSeries, HistogramSeries

BUCKETS = (0.1, 0.5, 1, 2, 5)
_labels = st.tuples(st.sampled_from(["a", "b", "ü"]), st.sampled_from(["x", "y"]))
_exemplar = st.one_of(st.none(), st.fixed_dictionaries({"trace_id": st.sampled_from(["t1", "t" * 32])}))
_amount = st.one_of(st.floats(0, 1e9), st.sampled_from([0, 1, 3, math.inf, 0.1, 0.5, 5.0000001]))


def _both(kind):
    new, old = CollectorRegistry(), CollectorRegistry()
    if kind == "counter":
        return new, old, CounterSeries("m", "help", ("l1", "l2"), new), Counter("m", "help", ("l1", "l2"), registry=old)
    return (new, old, HistogramSeries("m", "help", ("l1", "l2"), new, BUCKETS),
            Histogram("m", "help", ("l1", "l2"), registry=old, buckets=BUCKETS))


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(["counter", "histogram"]),
       st.lists(st.tuples(_labels, st.one_of(_amount, st.just(math.nan)), _exemplar, st.booleans()), max_size=20))
def test_recorded_values_are_exposed_as_prometheus_client_exposes_them(kind, records):
    with mock.patch("time.time", lambda: 1_700_000_000.5):
        new_reg, old_reg, new, old = _both(kind)
        for labels, amount, exemplar, by_child in records:
            if kind == "counter" and amount != amount:
                continue  # a NaN count is nobody's input
            if by_child:  # the prometheus_client-shaped way in
                child = new.labels(*labels)
                (child.inc if kind == "counter" else child.observe)(amount, exemplar=exemplar)
            elif kind == "counter":
                new.inc(labels, amount, exemplar)
            else:
                new.observe(labels, amount, exemplar)
            old_child = old.labels(*labels)
            (old_child.inc if kind == "counter" else old_child.observe)(amount, exemplar=exemplar)
        assert generate_latest(new_reg) == generate_latest(old_reg)
        assert generate_openmetrics(new_reg) == generate_openmetrics(old_reg)


def test_a_series_named_by_labels_exists_at_zero_and_bad_input_is_refused_alike():
    new_reg, old_reg, new, old = _both("counter")
    with mock.patch("time.time", lambda: 5.0):
        new.labels("a", "x")
        old.labels("a", "x")
        assert generate_latest(new_reg) == generate_latest(old_reg)
    for refuse in (lambda m: m.labels("a"), lambda m: m.labels("a", "x").inc(-1)):
        with pytest.raises(ValueError):
            refuse(new)
        with pytest.raises(ValueError):
            refuse(old)
    too_long = {"trace_id": "t" * 130}
    for m in (new, old):
        with pytest.raises(ValueError, match="exceeding the limit of 128"):
            m.labels("b", "y").inc(exemplar=too_long)
    assert new_reg.get_sample_value("m_total", {"l1": "b", "l2": "y"}) == 1.0  # counted, then refused, as there
    assert old_reg.get_sample_value("m_total", {"l1": "b", "l2": "y"}) == 1.0
    with pytest.raises(ValueError, match="Buckets not in sorted order"):
        HistogramSeries("h", "help", (), None, (2, 1))
