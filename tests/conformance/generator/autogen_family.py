"""AutoGen AgentChat (AssistantAgent, Swarm, AgentTool) through
openinference-instrumentation-autogen-agentchat, in tests/conformance/.venv-autogen."""
from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from .capture import Capture
from .families import API_KEY, MODEL, STEP_BUDGET, Family
from .scenarios import TOOLS, WORKERS, Scenario
from .scripted_model import ScriptedModel, Turn, call


def _client(model: ScriptedModel) -> Any:
    from autogen_ext.models.openai import OpenAIChatCompletionClient
    return OpenAIChatCompletionClient(
        model=MODEL, base_url=model.base_url, api_key=API_KEY, max_retries=0,
        model_info={"vision": False, "function_calling": True, "json_output": False, "family": "unknown",
                    "structured_output": False, "multiple_system_messages": True})


def _agent(name: str, client: Any, tools: list[Any], stream: bool = False, **kw: Any) -> Any:
    from autogen_agentchat.agents import AssistantAgent
    # max_tool_iterations is AgentChat's own tool-call budget (1 by default: one round of
    # calls, then the results are the reply); reflect_on_tool_use: the model answers after them
    return AssistantAgent(name, model_client=client, tools=tools, max_tool_iterations=STEP_BUDGET,
                          reflect_on_tool_use=True, model_client_stream=stream,
                          system_message="Help the user; use the tools.", **kw)


def play_autogen(s: Scenario, model: ScriptedModel) -> Callable[[], None]:
    from autogen_agentchat.conditions import TextMessageTermination
    from autogen_agentchat.teams import Swarm
    from autogen_agentchat.tools import AgentTool

    client = _client(model)
    stream = "stream" in s.needs
    if "handoff" in s.needs:
        triage = _agent("triage", client, [], handoffs=list(WORKERS))
        workers = [_agent(n, client, [f]) for n, f in WORKERS.items()]
        runner: Any = Swarm([triage, *workers], termination_condition=TextMessageTermination())
    else:
        tools: list[Any] = list(TOOLS)
        if "nested" in s.needs or "supervisor" in s.needs:
            tools += [AgentTool(_agent(n, client, [f], description=f"The {n} agent."), return_value_as_last_message=True)
                      for n, f in WORKERS.items()]
        runner = _agent("assistant", client, tools, stream=stream)

    def invoke() -> None:
        try:
            asyncio.run(runner.run(task=s.prompt))
        except RuntimeError as e:
            # at max_tool_iterations the agent asks the model once more for a reply; a model
            # that answers with yet another call makes the run raise (autogen-agentchat 0.7.5)
            if s.name != "step_budget_search_loop" or "no valid text response" not in str(e):
                raise
    return invoke


def autogen_turn(t: Turn) -> Turn:
    """AgentTool's one parameter is ``task``."""
    if not any(name in WORKERS for name, _ in t.calls):
        return t
    return Turn(text=t.text, finish_reason=t.finish_reason,
                calls=tuple((n, {"task": a["input"]} if n in WORKERS else a) for n, a in t.calls))


def autogen_hand_off(to: str) -> tuple[Turn, ...]:
    return (call(f"transfer_to_{to}"),)


def setup_autogen(c: Capture) -> None:
    from openinference.instrumentation.autogen_agentchat import AutogenAgentChatInstrumentor
    AutogenAgentChatInstrumentor().instrument(tracer_provider=c.tracer_provider)


FAMILIES = {f.name: f for f in [
    Family("autogen-openinference", "autogen-agentchat", "openinference-instrumentation-autogen-agentchat",
           setup_autogen, play_autogen, supports=frozenset({"parallel", "budget", "nested", "supervisor", "stream"}),
           adapt=autogen_turn, hand_off=autogen_hand_off,
           # not "handoff": openinference-instrumentation-autogen-agentchat 0.1.22 records no span of
           # an agent that runs inside a Swarm team (only the team's CHAIN and autogen-core's
           # messaging spans), so a hand-off run carries no evidence of its agents' calls
           why_skipped="hand-offs: the instrumentation records no span of the agents inside a Swarm team"),
]}
