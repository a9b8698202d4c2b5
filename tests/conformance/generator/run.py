"""``python -m generator.run FAMILY OUT_DIR``: play every scenario the family can enact
and write ``traces.json`` (and ``logs.json``), ``expected.json`` under OUT_DIR/FAMILY."""
from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .scenarios import SCENARIOS, WORLD, Scenario
from .scripted_model import Script, ScriptedModel

if TYPE_CHECKING:  # the JavaScript families run without the OTel Python SDK
    from .capture import Capture

# What each built-in check reads beyond spans and statuses: a family that does not capture it
# leaves the check undecided, whatever the run did.
NEEDS = {"search_loop": {"content"}, "abstention": {"content"}, "policy": {"content"},
         "repeated_call": {"content"}, "unrecovered_tool_error": set(), "context_overflow": {"finish_reasons"}}


def truth(enacts: list[str], captures: frozenset[str]) -> tuple[list[str], str]:
    """(checks that must fire, run verdict) for a run that enacted ``enacts``, recorded by an
    instrumentation that captures ``captures``: an enacted failure the capture cannot show
    must not fire, and a run on which nothing fired is undecided, not clean, when a check
    could not see its input."""
    blind = {c for c, needs in NEEDS.items() if not needs <= captures}
    fires = sorted(set(enacts) - blind)
    return fires, "failed" if fires else ("undecided" if blind else "clean")


def _traces(capture: Capture) -> set[int]:
    capture.tracer_provider.force_flush()
    return {sp.context.trace_id for sp in capture.spans.get_finished_spans()}


def _family(name: str):  # noqa: ANN202 (Family or NodeFamily, imported lazily: the venvs differ)
    if name == "crewai-openinference":
        from .crewai_family import FAMILY
        return FAMILY
    from .node_families import NODE_FAMILIES
    if name in NODE_FAMILIES:
        return NODE_FAMILIES[name]
    from .families import FAMILIES
    return FAMILIES[name]


def scripted(family: Any, s: Scenario) -> Script:
    """The scenario's model script, in the turns the family's framework expects."""
    script = s.script()
    if family.adapt is not None:
        script.turns = [family.adapt(t) for t in script.turns]
        tail = script.tail
        script.tail = None if tail is None else (lambda i, tail=tail: family.adapt(tail(i)))
    return script


def run_entry(family: Any, s: Scenario, trace_id: str, built: list[str], model: ScriptedModel) -> dict[str, Any]:
    """``expected.json``'s record of one played scenario: its truth by construction."""
    fires, verdict = truth(list(s.fires), family.captures)
    return {"scenario": s.name, "trace_id": trace_id, "not_runs": sorted(built), "enacts": sorted(s.fires),
            "fires": fires, "verdict": verdict, "loop": s.loops,
            **({"session": s.session, "over_session_budget": s.over_session_budget} if s.session else {}),
            "model_calls": model.script.served if model.script else 0, "tool_calls": sum(WORLD.counts.values())}


def expected_doc(family: Any, versions: dict[str, str], runs: list[dict[str, Any]],
                 written: dict[str, int], language: str = "python") -> dict[str, Any]:
    return {"family": family.name, "language": language, "framework": family.framework,
            "instrumentation": family.instrumentation,
            "content": family.content, "captures": sorted(family.captures), "versions": dict(sorted(versions.items())),
            "skipped": sorted(x.name for x in SCENARIOS if not family.plays(x)), "why_skipped": family.why_skipped,
            **written, "runs": runs}


def main(family_name: str, out: Path) -> None:
    family = _family(family_name)
    if family_name in _node_families():  # a Node process plays it (node.py)
        from .node import main as node_main
        node_main(family, out)
        return
    from .capture import Capture
    capture = Capture(family.name)
    family.setup(capture)
    runs = []
    with ScriptedModel() as model:
        for s in SCENARIOS:
            if not family.plays(s):
                continue
            WORLD.start(s)
            model.play(scripted(family, s), s.name)
            before = _traces(capture)
            invoke = family.play(s, model)
            built = _traces(capture) - before   # traces of building the agent (create_agent): not runs
            if s.session:
                # OpenInference's own way to put session.id on every span of the run
                from openinference.instrumentation import using_session
                with using_session(s.session):
                    invoke()
            else:
                invoke()
            new = sorted(_traces(capture) - before - built)
            assert len(new) == 1, f"{family.name}/{s.name}: {len(new)} traces, expected one"
            runs.append(run_entry(family, s, f"{new[0]:032x}", [f"{t:032x}" for t in built], model))
    written = capture.write(out / family.name)
    versions = {d: version(d) for d in {family.framework, family.instrumentation, *family.extras.values(),
                                        "opentelemetry-sdk"}}
    doc = expected_doc(family, versions, runs, written)
    (out / family.name / "expected.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{family.name}: {len(runs)} runs, {written['spans']} spans, {written['logs']} log records")


def _node_families() -> set[str]:
    from .node_families import NODE_FAMILIES
    return set(NODE_FAMILIES)


def rewrite_truth(family_name: str, out: Path) -> None:
    """Recompute ``fires`` and ``verdict`` of a recorded family from what its runs enacted,
    after a change to what the family is known to capture (no framework runs)."""
    family = _family(family_name)
    path = out / family.name / "expected.json"
    doc = json.loads(path.read_text())
    doc["captures"] = sorted(family.captures)
    for run in doc["runs"]:
        run["fires"], run["verdict"] = truth(run["enacts"], family.captures)
    path.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "--truth-only":
        rewrite_truth(sys.argv[2], Path(sys.argv[3]))
    else:
        main(sys.argv[1], Path(sys.argv[2]))
