"""The engine scored against the corpus's truth: ``python -m tests.conformance.score``.

Reads only committed files (``corpus/<family>/traces.json``, ``logs.json`` when present,
``expected.json``) through the same reader and pipeline as ``faultgate-stream check``.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faultgate_stream.checks.registry import select
from faultgate_stream.model.verdict import RunVerdict
from faultgate_stream.pipeline import check_spans
from faultgate_stream.read.files import read_files

CORPUS = Path(__file__).resolve().parent / "corpus"
BUILT_IN = "search_loop,abstention,policy,repeated_call,unrecovered_tool_error,context_overflow"


def families() -> list[Path]:
    return sorted(p for p in CORPUS.iterdir() if (p / "expected.json").is_file())


def expected(family: Path) -> dict[str, Any]:
    return json.loads((family / "expected.json").read_text())


def input_files(family: Path) -> list[Path]:
    return [p for p in (family / "traces.json", family / "logs.json") if p.is_file()]


def offline_verdicts(family: Path) -> list[RunVerdict]:
    """What ``faultgate-stream check traces.json [logs.json]`` says of the family."""
    found = read_files([str(p) for p in input_files(family)])
    return check_spans([f.spans for f in found], select(BUILT_IN.split(",")), [f.contents for f in found])


def verdict_of(v: RunVerdict) -> str:
    return v.verdict


@dataclass
class Outcome:
    scenario: str
    trace_id: str
    want_fires: tuple[str, ...]
    want_verdict: str
    got: list[tuple[str, tuple[str, ...]]]  # (verdict, fired checks) of each run the engine made of the trace

    @property
    def right(self) -> bool:
        if not self.want_verdict:  # a trace that is not a run (building the agent): no verdict at all
            return not self.got
        return self.got == [(self.want_verdict, self.want_fires)]


@dataclass
class Score:
    family: str
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def runs(self) -> int:
        return sum(bool(o.want_verdict) for o in self.outcomes)

    @property
    def right(self) -> int:
        return sum(o.right for o in self.outcomes if o.want_verdict)

    @property
    def setup_traces(self) -> int:
        """Traces that only built an agent: they must give no run at all."""
        return sum(not o.want_verdict for o in self.outcomes)

    @property
    def failures(self) -> int:
        return sum(bool(o.want_fires) for o in self.outcomes)

    @property
    def caught(self) -> int:
        return sum(bool(o.want_fires) and any(set(o.want_fires) <= set(f) for _, f in o.got) for o in self.outcomes)

    @property
    def false_alarms(self) -> int:
        """Runs on which a check fired that the script did not enact (or a trace split in two)."""
        return sum(any(set(f) - set(o.want_fires) for _, f in o.got) or len(o.got) != (1 if o.want_verdict else 0)
                   for o in self.outcomes)

    @property
    def undecided(self) -> int:
        return sum(any(v == "undecided" for v, _ in o.got) for o in self.outcomes)

    def wrong(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.right]


def score(family: Path, verdicts: Iterable[RunVerdict]) -> Score:
    by_trace: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for v in verdicts:
        by_trace.setdefault(v.key.trace_id, []).append((verdict_of(v), tuple(sorted(r.check for r in v.fired))))
    doc = expected(family)
    s = Score(doc["family"])
    for run in doc["runs"]:
        s.outcomes.append(Outcome(run["scenario"], run["trace_id"], tuple(run["fires"]), run["verdict"],
                                  sorted(by_trace.get(run["trace_id"], []))))
        for t in run.get("not_runs", ()):
            s.outcomes.append(Outcome(f"{run['scenario']} (building the agent)", t, (), "", by_trace.get(t, [])))
    return s


def table(scores: list[Score]) -> str:
    rows = [f"{'family':34} {'runs':>4} {'right':>5} {'failures':>8} {'caught':>6} {'false alarms':>12} {'undecided':>9} {'setup traces':>12}"]
    for s in scores:
        rows.append(f"{s.family:34} {s.runs:4} {s.right:5} {s.failures:8} {s.caught:6} {s.false_alarms:12} "
                    f"{s.undecided:9} {s.setup_traces:12}")
    for s in scores:
        for o in s.wrong():
            rows.append(f"  WRONG {s.family}/{o.scenario} ({o.trace_id[:12]}): want {o.want_verdict or 'no run'} "
                        f"{list(o.want_fires)}, got {o.got}")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table([score(f, offline_verdicts(f)) for f in families()]))
