"""LlamaIndex agent workflows (FunctionAgent, AgentWorkflow) through OpenInference's and
OpenLLMetry's instrumentations, in tests/conformance/.venv-llamaindex."""
from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

from .capture import Capture
from .families import API_KEY, MODEL, STEP_BUDGET, Family
from .scenarios import TOOLS, WORKERS, Scenario
from .scripted_model import ScriptedModel, Turn, call


def _llm(model: ScriptedModel) -> Any:
    from llama_index.llms.openai_like import OpenAILike
    return OpenAILike(model=MODEL, api_base=model.base_url, api_key=API_KEY, is_chat_model=True,
                      is_function_calling_model=True, max_retries=0, context_window=128_000)


def _agent(name: str, llm: Any, tools: list[Any], **kw: Any) -> Any:
    from llama_index.core.agent.workflow import FunctionAgent
    # streaming=True is FunctionAgent's default: every model call is a streamed response
    return FunctionAgent(name=name, description=f"The {name} agent.", llm=llm, tools=tools,
                         system_prompt="Help the user; use the tools.", **kw)


def _agent_tool(name: str, inner: Any) -> Any:
    from llama_index.core.tools import FunctionTool

    async def ask(input: str) -> str:  # noqa: A002 (the tool's parameter name)
        return str(await inner.run(user_msg=input))
    return FunctionTool.from_defaults(async_fn=ask, name=name, description=f"Ask the {name} agent.")


def play_llamaindex(s: Scenario, model: ScriptedModel) -> Callable[[], None]:
    from llama_index.core.agent.workflow import AgentWorkflow
    from llama_index.core.tools import FunctionTool
    from workflows.errors import WorkflowRuntimeError

    llm = _llm(model)
    tools = [FunctionTool.from_defaults(fn=f) for f in TOOLS]
    if "handoff" in s.needs:
        workers = [_agent(n, llm, [FunctionTool.from_defaults(fn=f)]) for n, f in WORKERS.items()]
        triage = _agent("triage", llm, [], can_handoff_to=list(WORKERS))
        runner: Any = AgentWorkflow(agents=[triage, *workers], root_agent="triage")
    else:
        if "nested" in s.needs or "supervisor" in s.needs:
            tools += [_agent_tool(n, _agent(n, llm, [FunctionTool.from_defaults(fn=f)])) for n, f in WORKERS.items()]
        runner = _agent("assistant", llm, tools)

    def invoke() -> None:
        async def go() -> None:
            # max_iterations is LlamaIndex's own step budget: past it the run raises
            await runner.run(user_msg=s.prompt, max_iterations=STEP_BUDGET)
        try:
            asyncio.run(go())
        except WorkflowRuntimeError:
            if s.name != "step_budget_search_loop":
                raise
    return invoke


def llamaindex_hand_off(to: str) -> tuple[Turn, ...]:
    # handoff is a return-direct tool: the named agent takes the next turn
    return (call("handoff", to_agent=to, reason="The user needs this agent."),)


def setup_openinference(c: Capture) -> None:
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
    LlamaIndexInstrumentor().instrument(tracer_provider=c.tracer_provider)


def setup_openllmetry(c: Capture) -> None:
    os.environ["TRACELOOP_TRACE_CONTENT"] = "true"
    from opentelemetry.instrumentation.llamaindex import LlamaIndexInstrumentor
    LlamaIndexInstrumentor().instrument(tracer_provider=c.tracer_provider)


# What OpenLLMetry leaves out when an agent is a tool: the call_tool span of an async
# FunctionTool that runs an agent gets no traceloop.entity.output (the tool_id and the
# result), and its model spans record no tool calls in their output messages, so the agent's
# answer (in the next model call's input, under the call id) cannot be tied to the step.
AGENT_TOOL_RESULT = ("the step of an agent used as a tool has no result and no call id: OpenLLMetry writes no "
                     "traceloop.entity.output on its call_tool span and no tool calls in model output messages")
LLAMAINDEX = frozenset({"parallel", "budget", "nested", "supervisor", "handoff", "stream"})
FAMILIES = {f.name: f for f in [
    Family("llamaindex-openinference", "llama-index-core", "openinference-instrumentation-llama-index",
           setup_openinference, play_llamaindex, supports=LLAMAINDEX, hand_off=llamaindex_hand_off),
    Family("llamaindex-openllmetry", "llama-index-core", "opentelemetry-instrumentation-llamaindex",
           setup_openllmetry, play_llamaindex, supports=LLAMAINDEX, hand_off=llamaindex_hand_off,
           undecided_on={n: AGENT_TOOL_RESULT for n in ("nested_agent", "supervisor_with_two_workers")}),
]}
