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

from faultgate_stream.gate.bands import BandSet
from faultgate_stream.gate.decide import VERDICTS, judge
from faultgate_stream.gate.rolling import Windows

NAN = math.nan
AV = ("agent", "version")


def _num(v: float | int | None) -> float:
    return NAN if v is None else float(v)


class GateCollector(Collector):
    def __init__(self, bands: Callable[[], BandSet], windows: Windows, outcome_runs: Counter,
                 describe: Callable[[str], str]) -> None:
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
        for w in self._windows.views():
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
        yield shadow_verdict
        yield undecided
        folded = CounterMetricFamily("faultgate_gate_windows_folded", self._help("faultgate_gate_windows_folded"))
        folded.add_metric([], self._windows.folded)
        yield folded
        missed = CounterMetricFamily("faultgate_gate_amendments_missed", self._help("faultgate_gate_amendments_missed"))
        missed.add_metric([], self._windows.amend_missed)
        yield missed
        yield self._luck_rate()

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
