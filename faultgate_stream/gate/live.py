"""The live gate as the service wires it: bands, windows, the sink and the collector."""
from __future__ import annotations

from faultgate_stream.gate import bands as band_files
from faultgate_stream.gate.bands import BandSet
from faultgate_stream.gate.collector import GateCollector
from faultgate_stream.gate.config import GateConfig
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
