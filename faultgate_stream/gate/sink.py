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
        if v.revision:
            # ponytail: a window holds each run once, as first decided; an amendment would
            # have to find and replace its run there. Amendments are counted
            # (faultgate_verdict_amendments_total); a gate that must follow them needs that.
            return
        if self.bands.band_for(v.agent) is None:
            return  # no band for this agent: nothing to compare its runs with
        shadow = shadow_run(v, v.shadow) if v.shadow else None
        self.windows.add(v.agent, v.agent_version, gate_run(v), shadow)
