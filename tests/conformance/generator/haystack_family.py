"""Haystack agents (haystack-ai's ``Agent``, ``AgentTool``) through
openinference-instrumentation-haystack, in tests/conformance/.venv-haystack."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .capture import Capture
from .families import API_KEY, MODEL, STEP_BUDGET, Family
from .scenarios import TOOLS, WORKERS, Scenario
from .scripted_model import ScriptedModel, Turn


def _generator(model: ScriptedModel) -> Any:
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.utils import Secret
    return OpenAIChatGenerator(api_key=Secret.from_token(API_KEY), model=MODEL, api_base_url=model.base_url,
                               max_retries=0)


def _agent(model: ScriptedModel, tools: list[Any], stream: bool) -> Any:
    from haystack.components.agents import Agent
    # max_agent_steps is the Agent's own step budget: it stops there (exit_reason
    # "max_agent_steps"), no exception; a tool that raises goes back to the model as an
    # error result (raise_on_tool_invocation_failure=False, the default)
    agent = Agent(chat_generator=_generator(model), tools=tools, system_prompt="Help the user; use the tools.",
                  max_agent_steps=STEP_BUDGET, streaming_callback=(lambda chunk: None) if stream else None)
    agent.warm_up()
    return agent


def play_haystack(s: Scenario, model: ScriptedModel) -> Callable[[], None]:
    from haystack.dataclasses import ChatMessage
    from haystack.tools import create_tool_from_function
    from haystack.tools.agent_tool import AgentTool

    tools = [create_tool_from_function(f) for f in TOOLS]
    if "nested" in s.needs or "supervisor" in s.needs:
        tools += [AgentTool(_agent(model, [create_tool_from_function(f)], False), name=n,
                            description=f"Ask the {n} agent.") for n, f in WORKERS.items()]
    from haystack import Pipeline
    # a Haystack agent runs as a pipeline's component: the instrumentation traces pipelines
    # and the components they run
    pipe = Pipeline()
    pipe.add_component("agent", _agent(model, tools, "stream" in s.needs))
    return lambda: pipe.run({"agent": {"messages": [ChatMessage.from_user(s.prompt)]}})


def haystack_turn(t: Turn) -> Turn:
    """AgentTool's parameter is the one user message it delegates."""
    if not any(name in WORKERS for name, _ in t.calls):
        return t
    return Turn(text=t.text, finish_reason=t.finish_reason, calls=tuple(
        (n, {"messages": [{"role": "user", "content": a["input"]}]} if n in WORKERS else a) for n, a in t.calls))


def setup_haystack(c: Capture) -> None:
    # the components' classes registered before instrumenting: it wraps the run of every
    # component class registered then (the agent and its chat generator; haystack's lazy imports make a
    # class registered only when its module loads)
    from haystack.components.agents import Agent  # noqa: F401
    from haystack.components.generators.chat import OpenAIChatGenerator  # noqa: F401
    from openinference.instrumentation.haystack import HaystackInstrumentor
    HaystackInstrumentor().instrument(tracer_provider=c.tracer_provider)


FAMILIES = {f.name: f for f in [
    Family("haystack-openinference", "haystack-ai", "openinference-instrumentation-haystack",
           setup_haystack, play_haystack, supports=frozenset({"parallel", "budget", "nested", "supervisor", "stream"}),
           adapt=haystack_turn,
           # openinference-instrumentation-haystack 0.1.46 traces the pipeline, the Agent and its
           # chat generator's runs: the tools run inside the Agent (no span, no status), a tool
           # message is written with its role alone (no content, no call id) and no LLM span
           # has llm.finish_reason. What it records: the prompts and answers, and the calls'
           # arguments in the model's output messages.
           captures=frozenset({"answers", "arguments", "no_tool_spans"})),
]}
