"""The live gate as the service wires it: bands, windows, the sink and the collector."""
from __future__ import annotations

from faultgate_stream.gate import bands as band_files
from faultgate_stream.gate.bands import BandSet
from faultgate_stream.gate.collector import GateCollector
from faultgate_stream.gate.config import GateConfig
from faultgate_stream.gate.decide import judge
from faultgate_stream.gate.rolling import Windows
from faultgate_stream.gate.sink import GateSink
from faultgate_stream.model.telemetry import Telemetry, describe


class LiveGate:
    """Raises ``InputError`` at construction when a band file cannot be read."""

    def __init__(self, config: GateConfig, telemetry: Telemetry) -> None:
        self.config = config
        self.windows = Windows(config.window, config.max_agents, config.max_versions)
        self.sink = GateSink(band_files.load(config), self.windows)
        telemetry.registry.register(GateCollector(lambda: self.sink.bands, self.windows,
                                                  telemetry["faultgate_outcome_runs"], describe))

    @property
    def bands(self) -> BandSet:
        return self.sink.bands

    def load_bands(self) -> BandSet:
        """The band files read again (SIGHUP), not yet applied. Raises ``InputError``."""
        return band_files.load(self.config)

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
