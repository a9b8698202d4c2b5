"""Google ADK (LlmAgent on LiteLLM's OpenAI-compatible client) through ADK's own OTel
telemetry, semconv-aligned, content on spans (``OTEL_SEMCONV_STABILITY_OPT_IN=
gen_ai_latest_experimental``, ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY``),
in tests/conformance/.venv-adk."""
from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

from .capture import Capture
from .families import API_KEY, MODEL, STEP_BUDGET, Family
from .scenarios import TOOLS, WORKERS, Scenario, ToolFailure
from .scripted_model import ScriptedModel, Turn, call

APP = "conformance"


def _tool_error(tool: Any, args: dict[str, Any], tool_context: Any, error: Exception) -> dict[str, Any] | None:
    """ADK's documented hook for a tool that raised: its return is the tool's response, so
    the model sees the failure and the run goes on (without it the run itself raises)."""
    if isinstance(error, ToolFailure):
        return {"error": str(error)}
    return None


def _agent(name: str, llm: Any, tools: list[Any], **kw: Any) -> Any:
    from google.adk.agents import LlmAgent
    return LlmAgent(name=name, model=llm, description=f"The {name} agent.", instruction="Help the user; use the tools.",
                    tools=tools, on_tool_error_callback=_tool_error, **kw)


def play_adk(s: Scenario, model: ScriptedModel) -> Callable[[], None]:
    from google.adk.agents.invocation_context import LlmCallsLimitExceededError
    from google.adk.agents.run_config import RunConfig, StreamingMode
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.runners import InMemoryRunner
    from google.adk.tools.agent_tool import AgentTool
    from google.genai import types

    llm = LiteLlm(model=f"openai/{MODEL}", api_base=model.base_url, api_key=API_KEY)
    if "handoff" in s.needs:
        # sub-agents: ADK gives the parent a transfer_to_agent tool
        agent = _agent("triage", llm, [], sub_agents=[_agent(n, llm, [f]) for n, f in WORKERS.items()])
    else:
        tools: list[Any] = list(TOOLS)
        if "nested" in s.needs or "supervisor" in s.needs:
            tools += [AgentTool(agent=_agent(n, llm, [f])) for n, f in WORKERS.items()]
        agent = _agent("assistant", llm, tools)
    runner = InMemoryRunner(agent=agent, app_name=APP)
    # max_llm_calls is ADK's own step budget: past it the run raises
    config = RunConfig(max_llm_calls=STEP_BUDGET,
                       streaming_mode=StreamingMode.SSE if "stream" in s.needs else StreamingMode.NONE)

    async def go() -> None:
        session = await runner.session_service.create_session(app_name=APP, user_id="user")
        message = types.Content(role="user", parts=[types.Part(text=s.prompt)])
        async for _ in runner.run_async(user_id="user", session_id=session.id, new_message=message, run_config=config):
            pass

    def invoke() -> None:
        try:
            asyncio.run(go())
        except LlmCallsLimitExceededError:
            if s.name != "step_budget_search_loop":
                raise
    return invoke


def adk_turn(t: Turn) -> Turn:
    """AgentTool's one parameter is ``request``."""
    if not any(name in WORKERS for name, _ in t.calls):
        return t
    return Turn(text=t.text, finish_reason=t.finish_reason,
                calls=tuple((n, {"request": a["input"]} if n in WORKERS else a) for n, a in t.calls))


def adk_hand_off(to: str) -> tuple[Turn, ...]:
    return (call("transfer_to_agent", agent_name=to),)


def setup_adk(c: Capture) -> None:
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # LiteLLM's price list from the package, not the network


FAMILIES = {f.name: f for f in [
    Family("google-adk-native", "google-adk", "google-adk", setup_adk, play_adk,
           supports=frozenset({"parallel", "budget", "nested", "supervisor", "stream"}),
           adapt=adk_turn, hand_off=adk_hand_off,
           # not "handoff": ADK writes the agent a transfer_to_agent call hands over to as a
           # second top-level invoke_agent beside the first (under its invoke_workflow span),
           # which the engine reads as a second run of the trace (one run per top-level agent)
           why_skipped="hand-offs: transfer_to_agent makes a second top-level agent, read as a second run"),
]}
