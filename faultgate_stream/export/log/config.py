"""Log settings."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, kw_only=True)
class LogConfig:
    level: Literal["debug", "info", "warning", "error"] = "info"
    verdicts: bool = True       # one line per verdict
    redact: Literal["builtin", "off"] = "builtin"

    def validate(self) -> list[str]:
        return []
