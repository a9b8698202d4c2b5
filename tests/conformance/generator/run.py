"""``python -m generator.run FAMILY OUT_DIR``: play every scenario the family can enact
and write ``traces.json`` (and ``logs.json``), ``expected.json`` under OUT_DIR/FAMILY."""
from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .scenarios import HAND_OFF, SCENARIOS, WORLD, Scenario
from .scripted_model import Script, ScriptedModel, Turn

if TYPE_CHECKING:  # the JavaScript families run without the OTel Python SDK
    from .capture import Capture

# What each built-in check reads, as alternatives (any one is enough): a family that captures
# none of them leaves the check undecided, whatever the run did. "content" stands for all of
# "answers", "arguments" and "results"; every family has "tool_status" (tool spans with their
# status) unless it says "no_tool_spans".
NEEDS = {"search_loop": ({"answers", "results"},), "abstention": ({"answers"},), "policy": ({"arguments"},),
         "repeated_call": ({"arguments", "results"},), "unrecovered_tool_error": ({"tool_status"}, {"results"}),
         "context_overflow": ({"finish_reasons"},)}


def _expanded(captures: frozenset[str]) -> set[str]:
    out = set(captures)
    if "content" in out:
        out |= {"answers", "arguments", "results"}
    if "no_tool_spans" not in out:
        out.add("tool_status")
    return out


def truth(enacts: list[str], captures: frozenset[str], gap: str = "") -> tuple[list[str], str]:
    """(checks that must fire, run verdict) for a run that enacted ``enacts``, recorded by an
    instrumentation that captures ``captures``: an enacted failure the capture cannot show
    must not fire, and a run on which nothing fired is undecided, not clean, when a check
    could not see its input, or when this run's recording has a ``gap`` (the family's
    ``undecided_on``)."""
    seen = _expanded(captures)
    blind = {c for c, alternatives in NEEDS.items() if not any(needs <= seen for needs in alternatives)}
    fires = sorted(set(enacts) - blind)
    return fires, "failed" if fires else ("undecided" if blind or gap else "clean")


def _traces(capture: Capture) -> set[int]:
    capture.tracer_provider.force_flush()
    return {sp.context.trace_id for sp in capture.spans.get_finished_spans()}


# The module of each family outside families.py: each runs in a venv of its own
# (regenerate.sh), so it is imported only by name.
MODULES = {"crewai-openinference": "crewai_family",
           "strands-native": "strands_family", "strands-native-latest": "strands_family",
           "llamaindex-openinference": "llamaindex_family", "llamaindex-openllmetry": "llamaindex_family",
           "autogen-openinference": "autogen_family", "semantic-kernel-native": "semantic_kernel_family",
           "google-adk-native": "adk_family", "haystack-openinference": "haystack_family",
           "dspy-openinference": "dspy_family", "beeai-openinference": "beeai_family"}


def _family(name: str):  # noqa: ANN202 (Family or NodeFamily, imported lazily: each venv differs)
    import importlib
    from .node_families import NODE_FAMILIES
    if name in NODE_FAMILIES:
        return NODE_FAMILIES[name]
    module = importlib.import_module(f".{MODULES.get(name, 'families')}", __package__)
    return module.FAMILIES[name]


def _hand_off(family, turns: list[Turn]) -> list[Turn]:  # noqa: ANN001 (Family)
    """The script with each stand-in hand-off made the framework's own (one or more turns)."""
    out = []
    for turn in turns:
        if not any(name == HAND_OFF for name, _ in turn.calls):
            out.append(turn)
            continue
        assert family.hand_off is not None, f"{family.name} plays a hand-off without saying how its framework makes one"
        (_, args), = turn.calls
        out.extend(family.hand_off(args["to"]))
    return out


def _adapted(family, turn: Turn) -> tuple[Turn, ...]:  # noqa: ANN001 (Family)
    """The turn as the family's framework expects it: one turn, or several (DSPy's ReAct
    answers in two)."""
    out = family.adapt(turn)
    return out if isinstance(out, tuple) else (out,)


def scripted(family: Any, s: Scenario) -> Script:
    """The scenario's model script, in the turns the family's framework expects: each
    stand-in hand-off made the framework's own, each turn adapted (one or several)."""
    script = s.script()
    script.turns = _hand_off(family, script.turns)
    if family.adapt is not None:
        script.turns = [a for t in script.turns for a in _adapted(family, t)]
        tail = script.tail
        script.tail = None if tail is None else (lambda i, tail=tail: _adapted(family, tail(i))[0])
    return script


def run_entry(family: Any, s: Scenario, trace_id: str, built: list[str], model: ScriptedModel) -> dict[str, Any]:
    """``expected.json``'s record of one played scenario: its truth by construction."""
    gap = family.undecided_on.get(s.name, "")
    fires, verdict = truth(list(s.fires), family.captures, gap)
    return {"scenario": s.name, "trace_id": trace_id, **({"undecided_because": gap} if gap else {}),
            "not_runs": sorted(built), "enacts": sorted(s.fires), "fires": fires, "verdict": verdict,
            "loop": s.loops,
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
        gap = family.undecided_on.get(run["scenario"], "")
        run.pop("undecided_because", None)
        if gap:
            run["undecided_because"] = gap
        run["fires"], run["verdict"] = truth(run["enacts"], family.captures, gap)
    path.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "--truth-only":
        rewrite_truth(sys.argv[2], Path(sys.argv[3]))
    else:
        main(sys.argv[1], Path(sys.argv[2]))
