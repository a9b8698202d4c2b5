"""The live judge stage's settings (``judge``). Without a ``spec`` there is no live judge."""
from __future__ import annotations

from dataclasses import dataclass, field

from faultgate_stream.model.settings import DURATION

# A chat completion of one short JSON verdict takes a second or two on a hosted model; a
# call past this is given up (counted as timeout) so one stuck request cannot hold the
# queue for long.
DEFAULT_TIMEOUT_S = 10.0
# Calls per minute: judges cost money per call, and a burst of runs must not become a
# burst of spend. What is over the budget is counted (reason budget), never queued.
DEFAULT_PER_MINUTE = 60
# Decided runs waiting for the judge: about ten minutes of the default budget. Past it,
# work is counted as queue_full, never waited for (ingestion must not wait on a judge).
DEFAULT_QUEUE = 600


@dataclass(frozen=True, kw_only=True)
class JudgeConfig:
    spec: str = ""  # openai:http(s)://HOST[:PORT]/PATH/MODEL; key from FAULTGATE_JUDGE_API_KEY
    timeout: float = field(default=DEFAULT_TIMEOUT_S, metadata=DURATION)  # per call
    per_minute: int = DEFAULT_PER_MINUTE
    queue: int = DEFAULT_QUEUE
    # Questions asked of every run (judge/contract.py QUESTIONS); a trajectory spec's
    # ``judge`` key adds questions for the agents its binding holds.
    checks: tuple[str, ...] = ("wrong_direction",)
    # Which runs are asked about (judge/route.py): all (every run), or any of failed,
    # undecided, drifted; plus ``sample``, a share (0..1) of the runs ``when`` leaves out.
    when: tuple[str, ...] = ("all",)
    sample: float = 0.0

    def validate(self) -> list[str]:
        from faultgate_stream.judge.contract import QUESTIONS

        problems = []
        if self.spec and not self.spec.startswith("openai:"):
            problems.append(f"spec: unknown judge {self.spec!r}; use openai:http(s)://HOST[:PORT]/PATH/MODEL")
        if not self.timeout > 0:
            problems.append("timeout: must be a duration > 0")
        for name in ("per_minute", "queue"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                problems.append(f"{name}: must be a whole number >= 1")
        from faultgate_stream.judge.route import WHEN

        problems += [f"when: unknown route {w!r}; use {', '.join(WHEN)}" for w in self.when if w not in WHEN]
        if not self.when:
            problems.append("when: name at least one route (all, failed, undecided, drifted)")
        if not 0.0 <= self.sample <= 1.0:
            problems.append(f"sample: must lie in [0, 1], not {self.sample}")
        problems += [f"checks: unknown judge check {n!r}; available: {', '.join(QUESTIONS)}"
                     for n in self.checks if n not in QUESTIONS]
        return problems
