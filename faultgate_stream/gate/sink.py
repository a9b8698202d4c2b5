"""Verdicts -> rolling windows: the gate's ``VerdictConsumer``, beside the other sinks."""
from __future__ import annotations

from faultgate_stream.gate.bands import BandSet
from faultgate_stream.gate.rolling import Windows
from faultgate_stream.gate.runs import gate_run, shadow_run
from faultgate_stream.model.verdict import EarlyFinding, RunVerdict


class GateSink:
    def __init__(self, bands: BandSet, windows: Windows) -> None:
        self.bands = bands          # swapped whole on reload; windows are kept
        self.windows = windows

    def early(self, finding: EarlyFinding) -> None:
        """The gate judges whole runs only."""

    def verdict(self, v: RunVerdict) -> None:
        if self.bands.band_for(v.agent) is None:
            return  # no band for this agent: nothing to compare its runs with
        shadow = shadow_run(v, v.shadow) if v.shadow else None
        shape = v.profile.shape if v.profile is not None else None
        if v.revision:
            # a late span or a judge changed the run: its first outcome is replaced, so the
            # clean rate counts each run once, as it now stands
            self.windows.amend(v.agent, v.agent_version, str(v.key), gate_run(v), shadow, shape)
            return
        self.windows.add(v.agent, v.agent_version, gate_run(v), shadow, key=str(v.key), shape=shape)
