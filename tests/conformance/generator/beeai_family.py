"""BeeAI Framework's ``ToolCallingAgent`` through openinference-instrumentation-beeai, in
tests/conformance/.venv-beeai."""
from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

from .capture import Capture
from .families import API_KEY, MODEL, STEP_BUDGET, Family
from .scenarios import TOOLS, Scenario
from .scripted_model import ScriptedModel


def play_beeai(s: Scenario, model: ScriptedModel) -> Callable[[], None]:
    from beeai_framework.adapters.openai import OpenAIChatModel
    from beeai_framework.agents.tool_calling import ToolCallingAgent
    from beeai_framework.errors import FrameworkError
    from beeai_framework.tools import tool

    llm = OpenAIChatModel(MODEL, api_key=API_KEY, base_url=model.base_url)
    # final_answer_as_tool=False: the agent's answer is the model's text reply (the agent still
    # runs its final_answer tool with it); tool_call_checker=False: a call the model repeats is
    # made again (the checker's cycle detection would refuse the retry after an error)
    agent = ToolCallingAgent(llm=llm, tools=[tool(f) for f in TOOLS], final_answer_as_tool=False,
                             tool_call_checker=False)

    async def go() -> None:
        # max_iterations is the agent's own step budget: past it the run raises AgentError
        await agent.run(s.prompt, max_iterations=STEP_BUDGET)

    def invoke() -> None:
        try:
            asyncio.run(go())
        except FrameworkError:
            if s.name != "step_budget_search_loop":
                raise
    return invoke


def setup_beeai(c: Capture) -> None:
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "true"  # LiteLLM's price list from the package, not the network
    from openinference.instrumentation.beeai import BeeAIInstrumentor
    BeeAIInstrumentor().instrument(tracer_provider=c.tracer_provider)


FAMILIES = {f.name: f for f in [
    Family("beeai-openinference", "beeai-framework", "openinference-instrumentation-beeai", setup_beeai, play_beeai,
           supports=frozenset({"parallel", "budget"}),
           captures=frozenset({"content"})),  # its LLM spans carry no llm.finish_reason
]}
