"""Which checks a service runs, and the files some of them read."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class ChecksConfig:
    enabled: tuple[str, ...] | None = None  # None: every rule, plus golden/outcome when their files are set
    golden: str | None = None               # golden.json: expected answers by scenario key or prompt
    outcomes: str | None = None             # outcomes.json: true/false by scenario key or prompt

    def validate(self) -> list[str]:
        from faultgate_stream.checks.registry import NAMES

        return [f"enabled: unknown check {n!r}; available: {', '.join(NAMES)}"
                for n in self.enabled or () if n not in NAMES]
