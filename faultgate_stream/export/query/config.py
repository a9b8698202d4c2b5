"""Settings of the verdict API's ring (``query``): how many recent verdicts it keeps."""
from __future__ import annotations

from dataclasses import dataclass, field

from faultgate_stream.model.settings import BYTES

# "Why did run X fail?" is asked minutes after the run, not days: a thousand verdicts is
# the last minutes of a busy service and hours of a quiet one. A verdict record is ~1-3 KB
# (reasons masked, a result per check), so the default costs a few MiB.
DEFAULT_MAX_VERDICTS = 1_000
# The byte bound is for runs whose reasons are long (a reason naming every one of hundreds
# of steps): estimated from the record's text, as the record is served.
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
# A request asks for at most this many verdicts (``limit``), so one answer stays small.
DEFAULT_MAX_PAGE = 200


@dataclass(frozen=True, kw_only=True)
class QueryConfig:
    # Off: no ring, and /api/v1 answers 404 like any unknown path.
    enabled: bool = True
    max_verdicts: int = DEFAULT_MAX_VERDICTS
    max_bytes: int = field(default=DEFAULT_MAX_BYTES, metadata=BYTES)

    def validate(self) -> list[str]:
        problems = []
        for name in ("max_verdicts", "max_bytes"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                problems.append(f"{name}: must be >= 1")
        return problems
