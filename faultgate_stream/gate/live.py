"""The live gate as the service wires it: bands, windows, the sink and the collector."""
from __future__ import annotations

from faultgate_stream.gate import bands as band_files
from faultgate_stream.gate.bands import BandSet
from faultgate_stream.gate.collector import GateCollector
from faultgate_stream.gate.config import GateConfig
from faultgate_stream.gate.decide import judge
from faultgate_stream.gate.drift import DRIFT, DriftResult, compare
from faultgate_stream.gate.rolling import UNKNOWN, Windows
from faultgate_stream.gate.sink import GateSink
from faultgate_stream.model.profile import DIMENSIONS
from faultgate_stream.model.telemetry import Telemetry, describe
from faultgate_stream.model.verdict import RunVerdict

# Windows whose drift judgement is cached: as many as the gate holds (max_agents x versions)
# is the need; past this the cache starts over rather than growing.
MAX_DRIFT_CACHE = 1024


class LiveGate:
    """Raises ``InputError`` at construction when a band file cannot be read."""

    def __init__(self, config: GateConfig, telemetry: Telemetry) -> None:
        self.config = config
        self.windows = Windows(config.window, config.max_agents, config.max_versions)
        self.sink = GateSink(band_files.load(config), self.windows)
        telemetry.registry.register(GateCollector(lambda: self.sink.bands, self.windows,
                                                  telemetry["faultgate_outcome_runs"], describe, config.drift))
        # (agent, version) -> (window changes, bands, result): judged again only when either moved
        self._drift_cache: dict[tuple[str, str], tuple[int, BandSet, DriftResult]] = {}

    @property
    def bands(self) -> BandSet:
        return self.sink.bands

    def load_bands(self) -> BandSet:
        """The band files read again (SIGHUP), not yet applied. Raises ``InputError``."""
        return band_files.load(self.config)

    def drift(self, agent: str, version: str) -> DriftResult | None:
        """The window's drift judgement now; None without shapes, a band, or drift on."""
        if not self.config.drift.enabled:
            return None
        bands = self.sink.bands
        band = bands.band_for(agent)
        if band is None:
            return None
        changes, counts = self.windows.shapes(agent, version)
        if counts is None:
            return None
        cached = self._drift_cache.get((agent, version))
        if cached is not None and cached[0] == changes and cached[1] is bands:
            return cached[2]
        r = compare(band.trajectories.baseline_for(agent, version) if band.trajectories else None, counts,
                    self.config.drift.alpha, self.config.drift.min_runs)
        if len(self._drift_cache) >= MAX_DRIFT_CACHE:
            self._drift_cache.clear()
        self._drift_cache[(agent, version)] = (changes, bands, r)
        return r

    def drifted(self, v: RunVerdict) -> bool:
        """Whether the run is one of its window's drift: the window is DRIFT and the run's
        shape holds a category whose share rose in a dimension that drifted (judge routing's
        ``drifted``)."""
        if v.profile is None:
            return False
        r = self.drift(v.agent, v.agent_version or UNKNOWN)
        if r is None or r.verdict != DRIFT:
            return False
        shape = dict(zip(DIMENSIONS, v.profile.shape))
        return any(m.change > 0 and shape.get(d.dimension) == m.category for d in r.drifted for m in d.moved)

    def apply(self, bands: BandSet) -> None:
        """New bands for every window from the next scrape on; the windows are kept."""
        self.sink.bands = bands

    def status(self) -> list[dict]:
        """Each gated (agent, version) window as the verdict API serves it (``/api/v1/gate``):
        the numbers the gate's gauges carry, computed the same way, at the time of asking.
        Undefined numbers (an empty window) are None. Agent names are raw: the API masks them."""
        bands = self.sink.bands
        out = []
        for w in self.windows.views():
            band = bands.band_for(w.agent)
            if band is None:
                continue  # its band was removed by a reload; the window waits for one
            a = w.active
            r = judge(band, a.clean, a.decided, a.policy_violations > 0)
            out.append({"agent": w.agent, "version": w.version, "verdict": r.verdict,
                        "clean_rate": _finite(r.clean_rate), "band": [band.min, band.max],
                        "pass_threshold": r.pass_threshold, "fail_threshold": r.fail_threshold,
                        "p_value": _finite(r.p_value), "required_n": r.required_n, "window_runs": a.decided,
                        "undecided_runs": a.undecided, "policy_violations": a.policy_violations})
        return out


def _finite(x: float | None) -> float | None:
    return None if x is None or x != x else x
