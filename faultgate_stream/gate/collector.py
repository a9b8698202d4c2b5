"""The gate's gauges, computed at scrape time from the windows and the current bands.

Per (agent, version) window with a band: ``faultgate_gate_verdict`` one-hot over
pass/fail/inconclusive, the clean rate, the band's min and max, the pass and fail
thresholds, the p-value, ``required_n`` (NaN unless INCONCLUSIVE), the window's runs and
the undecided runs counted apart; the same verdict and clean rate for the shadow rules
where a binding names them. Undefined values (an empty window) are NaN, so every series
of a gated window is always there. Luck Rate per agent is read from the outcome counters.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from prometheus_client import Counter
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from faultgate_stream.gate import drift
from faultgate_stream.gate.bands import BandSet
from faultgate_stream.gate.config import GateDriftConfig
from faultgate_stream.gate.decide import VERDICTS, judge
from faultgate_stream.gate.rolling import WindowView, Windows
from faultgate_stream.model.profile import DIMENSIONS

NAN = math.nan
AV = ("agent", "version")
# A category as a label value: tool classes are the sender's names, cut to this length.
MAX_CATEGORY_LABEL = 64


def _num(v: float | int | None) -> float:
    return NAN if v is None else float(v)


class GateCollector(Collector):
    def __init__(self, bands: Callable[[], BandSet], windows: Windows, outcome_runs: Counter,
                 describe: Callable[[str], str], drift_config: GateDriftConfig = GateDriftConfig()) -> None:
        self._drift = drift_config
        self._bands = bands
        self._windows = windows
        self._outcomes = outcome_runs
        self._help = describe

    def _gauge(self, name: str, labels: tuple[str, ...] = AV) -> GaugeMetricFamily:
        return GaugeMetricFamily(name, self._help(name), labels=list(labels))

    def collect(self) -> Iterator[Metric]:
        names = ("faultgate_gate_clean_rate", "faultgate_gate_band_min", "faultgate_gate_band_max",
                 "faultgate_gate_pass_threshold", "faultgate_gate_fail_threshold", "faultgate_gate_p_value",
                 "faultgate_gate_required_n", "faultgate_gate_window_runs", "faultgate_shadow_gate_clean_rate")
        g = {n: self._gauge(n) for n in names}
        verdict = self._gauge("faultgate_gate_verdict", (*AV, "verdict"))
        shadow_verdict = self._gauge("faultgate_shadow_gate_verdict", (*AV, "verdict"))
        undecided = CounterMetricFamily("faultgate_gate_undecided_runs", self._help("faultgate_gate_undecided_runs"),
                                        labels=list(AV))
        bands = self._bands()
        views = self._windows.views()
        for w in views:
            band = bands.band_for(w.agent)
            if band is None:
                continue  # its band was removed by a reload; the window waits for one
            key = [w.agent, w.version]
            a = w.active
            r = judge(band, a.clean, a.decided, a.policy_violations > 0)
            for v in VERDICTS:
                verdict.add_metric([*key, v.lower()], 1.0 if r.verdict == v else 0.0)
            for name, value in (("faultgate_gate_clean_rate", r.clean_rate), ("faultgate_gate_band_min", band.min),
                                ("faultgate_gate_band_max", band.max),
                                ("faultgate_gate_pass_threshold", r.pass_threshold),
                                ("faultgate_gate_fail_threshold", r.fail_threshold),
                                ("faultgate_gate_p_value", r.p_value), ("faultgate_gate_required_n", r.required_n),
                                ("faultgate_gate_window_runs", a.decided)):
                g[name].add_metric(key, _num(value))
            undecided.add_metric(key, a.undecided)
            if w.shadow is not None:
                s = judge(band, w.shadow.clean, w.shadow.decided, w.shadow.policy_violations > 0)
                for v in VERDICTS:
                    shadow_verdict.add_metric([*key, v.lower()], 1.0 if s.verdict == v else 0.0)
                g["faultgate_shadow_gate_clean_rate"].add_metric(key, _num(s.clean_rate))
        yield verdict
        yield from g.values()
        if self._drift.enabled:
            yield from self._drift_gauges(bands, views)
        yield shadow_verdict
        yield undecided
        folded = CounterMetricFamily("faultgate_gate_windows_folded", self._help("faultgate_gate_windows_folded"))
        folded.add_metric([], self._windows.folded)
        yield folded
        missed = CounterMetricFamily("faultgate_gate_amendments_missed", self._help("faultgate_gate_amendments_missed"))
        missed.add_metric([], self._windows.amend_missed)
        yield missed
        yield self._luck_rate()

    def _drift_gauges(self, bands: BandSet, views: list[WindowView]) -> Iterator[Metric]:
        """Drift per window with shapes and a band: the verdict one-hot, the numbers behind
        it per dimension (NaN where a dimension was not tested), and the categories whose
        share moved most."""
        verdict = self._gauge("faultgate_drift_verdict", (*AV, "verdict"))
        per_window = {n: self._gauge(n) for n in ("faultgate_drift_window_runs", "faultgate_drift_baseline_runs",
                                                   "faultgate_drift_threshold")}
        per_dim = {n: self._gauge(n, (*AV, "dimension")) for n in ("faultgate_drift_p_value",
                                                                   "faultgate_drift_distance")}
        moved = self._gauge("faultgate_drift_share_change", (*AV, "dimension", "category"))
        for w in views:
            band = bands.band_for(w.agent)
            if band is None or w.shapes is None:
                continue
            r = drift.compare(band.trajectories.baseline_for(w.agent, w.version) if band.trajectories else None,
                              w.shapes, self._drift.alpha, self._drift.min_runs)
            key = [w.agent, w.version]
            for v in drift.VERDICTS:
                verdict.add_metric([*key, v.lower()], 1.0 if r.verdict == v else 0.0)
            for name, value in (("faultgate_drift_window_runs", r.window_runs),
                                ("faultgate_drift_baseline_runs", r.baseline_runs),
                                ("faultgate_drift_threshold", r.threshold)):
                per_window[name].add_metric(key, float(value))
            dims = {d.dimension: d for d in r.dimensions}
            for dim in DIMENSIONS:
                d = dims.get(dim)
                per_dim["faultgate_drift_p_value"].add_metric([*key, dim], _num(d.p_value if d else None))
                per_dim["faultgate_drift_distance"].add_metric([*key, dim], _num(d.distance if d else None))
                for m in d.moved if d else ():
                    moved.add_metric([*key, dim, m.category[:MAX_CATEGORY_LABEL]], m.change)
        yield verdict
        yield from per_window.values()
        yield from per_dim.values()
        yield moved

    def _luck_rate(self) -> GaugeMetricFamily:
        """luckrate's Luck Rate per agent: passing runs whose path was not clean, over
        passing runs; NaN while an agent has outcomes but no passing run."""
        passed: dict[str, list[float]] = {}
        for metric in self._outcomes.collect():
            for s in metric.samples:
                if not s.name.endswith("_total"):
                    continue
                agent = s.labels["agent"]
                tally = passed.setdefault(agent, [0.0, 0.0])
                if s.labels["outcome"] == "pass":
                    tally[0] += s.value
                    tally[1] += s.value if s.labels["path"] == "dirty" else 0.0
        luck = self._gauge("faultgate_gate_luck_rate", ("agent",))
        for agent, (n, dirty) in passed.items():
            luck.add_metric([agent], dirty / n if n else NAN)
        return luck
