"""Semantic Kernel's ChatCompletionAgent through its own GenAI telemetry
(``SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE``), in
tests/conformance/.venv-sk."""
from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

from .capture import Capture
from .families import API_KEY, MODEL, STEP_BUDGET, Family
from .scenarios import TOOLS, WORKERS, Scenario
from .scripted_model import ScriptedModel, Turn

PLUGIN = "tools"


def _plugin(name: str, funcs: list[Callable[..., str]]) -> Any:
    from semantic_kernel.functions import KernelPlugin, kernel_function
    return KernelPlugin.from_object(name, {f.__name__: kernel_function(f, name=f.__name__, description=f.__doc__)
                                           for f in funcs})


def _agent(name: str, service: Any, plugins: list[Any]) -> Any:
    from semantic_kernel.agents import ChatCompletionAgent
    from semantic_kernel.connectors.ai import FunctionChoiceBehavior
    from semantic_kernel.connectors.ai.open_ai import OpenAIChatPromptExecutionSettings
    from semantic_kernel.functions import KernelArguments

    # maximum_auto_invoke_attempts is Semantic Kernel's own budget of model rounds that call tools
    settings = OpenAIChatPromptExecutionSettings(
        function_choice_behavior=FunctionChoiceBehavior.Auto(maximum_auto_invoke_attempts=STEP_BUDGET))
    return ChatCompletionAgent(service=service, name=name, description=f"The {name} agent.",
                               instructions="Help the user; use the tools.", plugins=plugins,
                               arguments=KernelArguments(settings=settings))


def play_semantic_kernel(s: Scenario, model: ScriptedModel) -> Callable[[], None]:
    from openai import AsyncOpenAI
    from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion

    service = OpenAIChatCompletion(ai_model_id=MODEL, async_client=AsyncOpenAI(base_url=model.base_url,
                                                                               api_key=API_KEY, max_retries=0))
    plugins: list[Any] = [_plugin(PLUGIN, list(TOOLS))]
    if "nested" in s.needs or "supervisor" in s.needs:
        # an agent is a plugin of another agent: Semantic Kernel's agent-as-tool
        plugins += [_agent(n, service, [_plugin(PLUGIN, [f])]) for n, f in WORKERS.items()]
    agent = _agent("assistant", service, plugins)

    def invoke() -> None:
        async def go() -> None:
            if "stream" in s.needs:
                async for _ in agent.invoke_stream(messages=s.prompt):
                    pass
            else:
                await agent.get_response(messages=s.prompt)
        asyncio.run(go())
    return invoke


def semantic_kernel_turn(t: Turn) -> Turn:
    """A function's name to the model is ``<plugin>-<function>``; an agent plugin's one
    function is ``<agent>-<agent>`` and takes ``messages``."""
    def named(n: str, a: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        if n in WORKERS:
            return f"{n}-{n}", {"messages": a["input"]}
        return f"{PLUGIN}-{n}", a
    return Turn(text=t.text, finish_reason=t.finish_reason, calls=tuple(named(n, a) for n, a in t.calls))


def setup_semantic_kernel(c: Capture) -> None:
    # read when semantic_kernel is first imported: set before it is
    os.environ["SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS"] = "true"
    os.environ["SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE"] = "true"


FAMILIES = {f.name: f for f in [
    Family("semantic-kernel-native", "semantic-kernel", "semantic-kernel", setup_semantic_kernel, play_semantic_kernel,
           supports=frozenset({"parallel", "budget", "nested", "supervisor", "stream"}), adapt=semantic_kernel_turn),
]}
