"""``python -m generator.run FAMILY OUT_DIR``: play every scenario the family can enact
and write ``traces.json`` (and ``logs.json``), ``expected.json`` under OUT_DIR/FAMILY."""
from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path

from .capture import Capture
from .scenarios import SCENARIOS, WORLD
from .scripted_model import ScriptedModel

# Checks whose input is not message content: with content off they still decide.
CONTENT_FREE = frozenset({"context_overflow", "unrecovered_tool_error"})


def visible(enacts: tuple[str, ...], content: str) -> list[str]:
    """The enacted failures the engine can see in what was captured."""
    return sorted(enacts) if content != "off" else sorted(set(enacts) & CONTENT_FREE)


def expected_verdict(enacts: tuple[str, ...], content: str) -> str:
    """The run's verdict the engine owes: failed when an enacted failure is visible; with
    content off, undecided otherwise (no check that reads content can pass without it)."""
    if visible(enacts, content):
        return "failed"
    return "clean" if content != "off" else "undecided"


def _traces(capture: Capture) -> set[int]:
    capture.tracer_provider.force_flush()
    return {sp.context.trace_id for sp in capture.spans.get_finished_spans()}


def main(family_name: str, out: Path) -> None:
    if family_name == "crewai-openinference":
        from .crewai_family import FAMILY as family
    else:
        from .families import FAMILIES
        family = FAMILIES[family_name]
    capture = Capture(family.name)
    family.setup(capture)
    runs = []
    with ScriptedModel() as model:
        for s in SCENARIOS:
            if not family.plays(s):
                continue
            WORLD.start(s)
            script = s.script()
            if family.adapt is not None:
                script.turns = [family.adapt(t) for t in script.turns]
                tail = script.tail
                script.tail = None if tail is None else (lambda i, tail=tail: family.adapt(tail(i)))
            model.play(script, s.name)
            before = _traces(capture)
            invoke = family.play(s, model)
            built = _traces(capture) - before   # traces of building the agent (create_agent): not runs
            invoke()
            new = sorted(_traces(capture) - before - built)
            assert len(new) == 1, f"{family.name}/{s.name}: {len(new)} traces, expected one"
            runs.append({"scenario": s.name, "trace_id": f"{new[0]:032x}",
                         "not_runs": [f"{t:032x}" for t in sorted(built)], "enacts": sorted(s.fires),
                         "fires": visible(s.fires, family.content),
                         "verdict": expected_verdict(s.fires, family.content),
                         "model_calls": model.script.served if model.script else 0,
                         "tool_calls": sum(WORLD.counts.values())})
    written = capture.write(out / family.name)
    versions = {d: version(d) for d in {family.framework, family.instrumentation, *family.extras.values(),
                                        "opentelemetry-sdk"}}
    doc = {"family": family.name, "framework": family.framework, "instrumentation": family.instrumentation,
           "content": family.content, "versions": dict(sorted(versions.items())),
           "skipped": sorted(x.name for x in SCENARIOS if not family.plays(x)), "why_skipped": family.why_skipped,
           **written, "runs": runs}
    (out / family.name / "expected.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{family.name}: {len(runs)} runs, {written['spans']} spans, {written['logs']} log records")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
