"""CrewAI with openinference-instrumentation-crewai (runs in tests/conformance/.venv-crewai:
CrewAI pins an ``openai`` 2.x that the other families' libraries do not accept)."""
from __future__ import annotations

import os
from collections.abc import Callable

from .capture import Capture
from .families import API_KEY, MODEL, Family
from .scenarios import TOOLS, Scenario, ToolFailure
from .scripted_model import ScriptedModel

# CrewAI's own usage telemetry and trace upload go to its vendor: off, nothing leaves.
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")


def _crewai_tool(f: Callable[..., str]):  # noqa: ANN202 (CrewAI's tool type)
    from crewai.tools import tool

    def run(**kwargs: str) -> str:
        try:
            return f(**kwargs)
        except ToolFailure as e:  # CrewAI shows a raised error to the model as the tool's output
            raise RuntimeError(str(e)) from e
    run.__name__, run.__doc__, run.__annotations__ = f.__name__, f.__doc__, f.__annotations__
    return tool(f.__name__)(run)


def play_crewai(s: Scenario, model: ScriptedModel) -> Callable[[], None]:
    from crewai import LLM, Agent, Crew, Task

    llm = LLM(model=f"openai/{MODEL}", base_url=model.base_url, api_key=API_KEY)
    agent = Agent(role="assistant", goal="Help the user with the tools", backstory="A support agent.",
                  llm=llm, tools=[_crewai_tool(f) for f in TOOLS], max_iter=12, verbose=False)
    task = Task(description=s.prompt, expected_output="An answer for the user.", agent=agent)
    crew = Crew(agents=[agent], tasks=[task], verbose=False)

    def invoke() -> None:
        from pydantic import ValidationError
        try:
            crew.kickoff()
        except ValidationError:
            # At max_iter CrewAI asks for a final answer; a model that answers with yet another
            # tool call makes kickoff fail validating the task output (crewai 1.15): the run
            # ends there, in error and without an answer, as it would for a user.
            if s.name != "step_budget_search_loop":
                raise
    return invoke


def setup_crewai(c: Capture) -> None:
    from openinference.instrumentation.crewai import CrewAIInstrumentor
    CrewAIInstrumentor().instrument(tracer_provider=c.tracer_provider)


FAMILIES = {f.name: f for f in [Family("crewai-openinference", "crewai", "openinference-instrumentation-crewai", setup_crewai, play_crewai,
                supports=frozenset({"parallel", "budget", "session"}), skip=frozenset({"context_overflow"}),
                why_skipped="openinference-instrumentation-crewai 1.1.21 records no model span at all (only the "
                            "crew, the task and each tool), so a cut-off answer leaves no trace in what is captured; "
                            "the engine holds context_overflow undecided only where a model span lacks its finish "
                            "reason, else every tool-only trace would be undecided")]}
