"""Bands by agent glob, loaded from their files; a reload builds a new set or fails whole."""
from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from faultgate_stream.gate.band import Band
from faultgate_stream.gate.config import GateConfig
from faultgate_stream.model.errors import InputError


@dataclass(frozen=True)
class BandSet:
    entries: tuple[tuple[tuple[str, ...], Band, str], ...] = ()   # (globs, band, file)

    def band_for(self, agent: str) -> Band | None:
        for globs, band, _ in self.entries:
            if any(fnmatchcase(agent, g) for g in globs):
                return band
        return None

    @property
    def sources(self) -> list[dict[str, object]]:
        return [{"agents": list(g), "band": path, "runs": b.runs, "n": b.n} for g, b, path in self.entries]


def load(config: GateConfig) -> BandSet:
    """Raises ``InputError`` naming every band that cannot be read by its config path."""
    entries, problems = [], []
    for i, b in enumerate(config.bands):
        try:
            entries.append((tuple(b.agents), Band.load(b.band), b.band))
        except InputError as e:
            problems.append(f"gate.bands[{i}]: {e}")
    if problems:
        raise InputError("\n".join(problems))
    return BandSet(tuple(entries))
