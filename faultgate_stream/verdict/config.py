"""Settings of the amendment store (``amend``): how long decided runs are kept so that a
late span can still change their verdict. Zero never means "unlimited"."""
from __future__ import annotations

from dataclasses import dataclass, field

from faultgate_stream.model.settings import BYTES, DURATION

# Late spans come seconds after their run's verdict (one BatchSpanProcessor flush, 5 s at
# most by default, or an exporter retrying after a blip); a minute covers both with room.
DEFAULT_MAX_AGE_S = 60.0
# A run's records stay alive while it is kept: at the bench's ~1,000 runs/s a minute would
# be 60,000 runs; the run bound cuts that to what late spans plausibly need, the byte bound
# to what memory allows. Bytes are the assembler's estimates (``SpanRecord.size`` plus
# ``amend.ENTRY_BYTES``, as ``assemble.max_bytes`` counts them): tracemalloc measured the
# kept records of 16-span runs with ~130-character contents at 1,109 B a span against an
# estimate of 636, so 32 MiB of estimate is about 56 MiB of memory.
DEFAULT_MAX_RUNS = 5_000
DEFAULT_MAX_BYTES = 32 * 1024 * 1024
# Re-evaluating a run costs its every span, once per late span: a run with more spans than
# this is not kept (counted), so a flood of late spans into a huge run cannot make each
# span cost a whole run's evaluation.
DEFAULT_MAX_RUN_SPANS = 2_000


@dataclass(frozen=True, kw_only=True)
class AmendConfig:
    # Off: late spans are counted and carry the earlier verdict, and judge results have no
    # way to reach a verdict (the judge stage needs the store).
    enabled: bool = True
    max_runs: int = DEFAULT_MAX_RUNS
    max_bytes: int = field(default=DEFAULT_MAX_BYTES, metadata=BYTES)
    max_age: float = field(default=DEFAULT_MAX_AGE_S, metadata=DURATION)
    max_run_spans: int = DEFAULT_MAX_RUN_SPANS

    def validate(self) -> list[str]:
        problems = []
        for name in ("max_runs", "max_bytes", "max_run_spans"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                problems.append(f"{name}: must be a whole number >= 1")
        if not self.max_age > 0:
            problems.append("max_age: must be a duration > 0")
        return problems
