"""Each family: one agent framework, driven through its real instrumentation.

A family instruments its framework once (``setup``) and plays a scenario (``play``)
against the scripted model. Instrumentors are process-global, so ``run.py`` gives each
family a process of its own.
"""
from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .capture import Capture
from .scenarios import TOOLS, Scenario, get_weather
from .scripted_model import ScriptedModel, Turn, call

MODEL = "scripted-1"
API_KEY = "sk-scripted-not-a-key"


@dataclass
class Family:
    name: str
    framework: str            # distribution whose version is recorded
    instrumentation: str      # distribution whose version is recorded
    setup: Callable[[Capture], None]
    # builds the agent (its construction may be traced too) and returns the call that runs it
    play: Callable[[Scenario, ScriptedModel], Callable[[], None]]
    supports: frozenset[str] = frozenset({"parallel"})
    skip: frozenset[str] = frozenset()   # scenarios the framework cannot enact, with the reason in why_skipped
    why_skipped: str = ""
    # how the framework expects a turn: smolagents answers by calling its final_answer tool;
    # DSPy's ReAct answers in two turns (its finish tool, then its extractor)
    adapt: Callable[[Turn], Turn | tuple[Turn, ...]] | None = None
    # what the instrumentation records, known from its source: message content (prompts,
    # answers, tool arguments and results) and the model's finish reasons
    captures: frozenset[str] = frozenset({"content", "finish_reasons"})
    # where message content is captured: span, span_only, event_only (log events), span_and_event, off,
    # span_events (events of the span itself)
    content: str = "span"
    extras: dict[str, str] = field(default_factory=dict)
    # the framework's own hand-off to the named agent (scenarios.HAND_OFF stands for it): the
    # turns of the agent that hands off
    hand_off: Callable[[str], tuple[Turn, ...]] | None = None
    # scenarios whose run this instrumentation records without something a check needs
    # (known from what it wrote, with the reason): nothing enacted there may read as clean
    undecided_on: dict[str, str] = field(default_factory=dict)

    def plays(self, s: Scenario) -> bool:
        return s.needs <= self.supports and s.name not in self.skip


# ---------------------------------------------------------------- LangGraph

def _langgraph_agent(model: ScriptedModel, nested: bool) -> Any:
    from langchain_core.tools import StructuredTool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import ToolNode, create_react_agent

    llm = ChatOpenAI(model=MODEL, base_url=model.base_url, api_key=API_KEY, max_retries=0)
    tools = [StructuredTool.from_function(f) for f in TOOLS]
    if nested:
        inner = create_react_agent(llm, ToolNode([StructuredTool.from_function(get_weather)], handle_tool_errors=True),
                                   name="weather_specialist")

        def weather_specialist(input: str) -> str:  # noqa: A002 (the tool's parameter name)
            """Ask the weather specialist agent."""
            out = inner.invoke({"messages": [("user", input)]})
            return str(out["messages"][-1].content)

        tools.append(StructuredTool.from_function(weather_specialist))
    # handle_tool_errors=True: a raised tool error goes back to the model as a ToolMessage
    # with status "error", as a LangGraph agent in production is set up to do.
    return create_react_agent(llm, ToolNode(tools, handle_tool_errors=True), name="assistant")


def play_langgraph(s: Scenario, model: ScriptedModel) -> Callable[[], None]:
    from langgraph.errors import GraphRecursionError

    agent = _langgraph_agent(model, "nested" in s.needs)

    def invoke() -> None:
        try:
            # recursion_limit is LangGraph's own step budget: 25 super-steps is 12 model/tool rounds
            agent.invoke({"messages": [("user", s.prompt)]}, config={"recursion_limit": 25})
        except GraphRecursionError:
            pass
    return invoke


def setup_langgraph_openinference(c: Capture) -> None:
    from openinference.instrumentation.langchain import LangChainInstrumentor
    LangChainInstrumentor().instrument(tracer_provider=c.tracer_provider)


def setup_langgraph_openllmetry(c: Capture) -> None:
    os.environ["TRACELOOP_TRACE_CONTENT"] = "true"
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor
    LangchainInstrumentor().instrument(tracer_provider=c.tracer_provider)


# ---------------------------------------------------------------- OpenAI Agents SDK

def play_agents(s: Scenario, model: ScriptedModel) -> Callable[[], None]:
    from agents import Agent, MaxTurnsExceeded, OpenAIChatCompletionsModel, Runner, function_tool
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=model.base_url, api_key=API_KEY, max_retries=0)
    llm = OpenAIChatCompletionsModel(model=MODEL, openai_client=client)
    tools = [function_tool(f) for f in TOOLS]
    if "nested" in s.needs:
        inner = Agent(name="weather_specialist", instructions="Answer weather questions.", model=llm,
                      tools=[function_tool(get_weather)])
        tools.append(inner.as_tool(tool_name="weather_specialist", tool_description="Ask the weather specialist."))
    agent = Agent(name="assistant", instructions="Help the user; use the tools.", model=llm, tools=tools)

    def invoke() -> None:
        try:
            # max_turns is the SDK's own step budget
            asyncio.run(Runner.run(agent, s.prompt, max_turns=12))
        except MaxTurnsExceeded:
            pass
    return invoke


def _agents_without_the_default_exporter() -> None:
    # The SDK's default processor uploads traces to the vendor's backend: off, so the only
    # processor is the instrumentation's and nothing leaves the machine.
    from agents.tracing import set_trace_processors
    set_trace_processors([])


def setup_agents_openinference(c: Capture) -> None:
    _agents_without_the_default_exporter()
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    OpenAIAgentsInstrumentor().instrument(tracer_provider=c.tracer_provider)


def setup_agents_otel_v2(c: Capture) -> None:
    _agents_without_the_default_exporter()
    from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    OpenAIAgentsInstrumentor().instrument(tracer_provider=c.tracer_provider, capture_message_content="span_only")


# ---------------------------------------------------------------- plain openai tool loop

OPENAI_TOOL_SPECS = [
    {"type": "function", "function": {"name": f.__name__, "description": (f.__doc__ or "").split("\n")[0],
                                      "parameters": {"type": "object", "properties": {
                                          p: {"type": "string"} for p in f.__annotations__ if p != "return"},
                                          "required": [p for p in f.__annotations__ if p != "return"]}}}
    for f in TOOLS]
STEP_BUDGET = 12


def play_openai_loop(s: Scenario, model: ScriptedModel) -> Callable[[], None]:
    return lambda: _openai_loop(s, model)


def _openai_loop(s: Scenario, model: ScriptedModel) -> None:
    """A hand-written agent loop over the ``openai`` client: chat spans come from
    opentelemetry-instrumentation-openai-v2, the agent and tool spans from the same
    project's util-genai handler, as its docs tell a hand-made agent to do."""
    from openai import OpenAI
    from opentelemetry.util.genai.handler import get_telemetry_handler
    from opentelemetry.util.genai.types import Error, InputMessage, OutputMessage, Text

    from .scenarios import ToolFailure

    handler = get_telemetry_handler()
    client = OpenAI(base_url=model.base_url, api_key=API_KEY, max_retries=0)
    funcs = {f.__name__: f for f in TOOLS}
    agent = handler.start_invoke_local_agent(request_model=MODEL, agent_name="assistant")
    agent.input_messages = [InputMessage(role="user", parts=[Text(content=s.prompt)])]
    messages: list[dict[str, Any]] = [{"role": "user", "content": s.prompt}]
    answer = None
    for _ in range(STEP_BUDGET):
        reply = client.chat.completions.create(model=MODEL, messages=messages, tools=OPENAI_TOOL_SPECS)
        msg = reply.choices[0].message
        if not msg.tool_calls:
            answer = msg.content or ""
            agent.finish_reasons = [reply.choices[0].finish_reason]
            break
        messages.append(msg.model_dump(exclude_none=True))
        for tc in msg.tool_calls:
            tool = handler.start_tool(tc.function.name, tool_call_id=tc.id, tool_type="function")
            args = json.loads(tc.function.arguments)
            tool.arguments = args
            try:
                result = funcs[tc.function.name](**args)
            except ToolFailure as e:
                result = f"Error: {e}"
                tool.tool_result = result
                tool.fail(Error(message=str(e), type=ToolFailure))
            else:
                tool.tool_result = result
                tool.stop()
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": result})
    if answer is not None:
        agent.output_messages = [OutputMessage(role="assistant", parts=[Text(content=answer)],
                                               finish_reason=agent.finish_reasons[0])]
        agent.stop()
    else:
        agent.fail(Error(message=f"step budget of {STEP_BUDGET} model calls exhausted", type=RuntimeError))


def openai_v2_setup(mode: str) -> Callable[[Capture], None]:
    def setup(c: Capture) -> None:
        if mode == "off":
            os.environ.pop("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", None)
        else:
            os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = mode.upper()
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
        OpenAIInstrumentor().instrument(tracer_provider=c.tracer_provider, logger_provider=c.logger_provider)
    return setup


# ---------------------------------------------------------------- smolagents

def play_smolagents(s: Scenario, model: ScriptedModel) -> Callable[[], None]:
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    llm = OpenAIServerModel(model_id=MODEL, api_base=model.base_url, api_key=API_KEY)
    tools = [tool(f) for f in TOOLS]
    agent = ToolCallingAgent(tools=tools, model=llm, max_steps=12, name="assistant")
    return lambda: agent.run(s.prompt)


def smolagents_turn(t: Turn) -> Turn:
    return call("final_answer", answer=t.text) if not t.calls else t


def setup_smolagents(c: Capture) -> None:
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    SmolagentsInstrumentor().instrument(tracer_provider=c.tracer_provider)


# ---------------------------------------------------------------- PydanticAI

def play_pydantic_ai(s: Scenario, model: ScriptedModel) -> Callable[[], None]:
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import UsageLimitExceeded
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.usage import UsageLimits

    llm = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=model.base_url, api_key=API_KEY))
    agent = Agent(llm, name="assistant", tools=[_retry_on_failure(f) for f in TOOLS])

    def invoke() -> None:
        try:
            # request_limit is PydanticAI's own step budget
            agent.run_sync(s.prompt, usage_limits=UsageLimits(request_limit=12))
        except UsageLimitExceeded:
            pass
    return invoke


def _retry_on_failure(f: Callable[..., str]) -> Callable[..., str]:
    """PydanticAI hands a tool's failure back to the model through ModelRetry (its
    documented way); any other exception ends the run."""
    import functools

    from pydantic_ai import ModelRetry

    from .scenarios import ToolFailure

    @functools.wraps(f)
    def tool(**kwargs: Any) -> str:
        try:
            return f(**kwargs)
        except ToolFailure as e:
            raise ModelRetry(str(e)) from e
    return tool


def setup_pydantic_ai(c: Capture) -> None:
    from pydantic_ai import Agent, InstrumentationSettings
    Agent.instrument_all(InstrumentationSettings(tracer_provider=c.tracer_provider, include_content=True))


FAMILIES = {f.name: f for f in [
    Family("langgraph-openinference", "langgraph", "openinference-instrumentation-langchain",
           setup_langgraph_openinference, play_langgraph, supports=frozenset({"parallel", "budget", "nested", "session"})),
    Family("langgraph-openllmetry", "langgraph", "opentelemetry-instrumentation-langchain",
           setup_langgraph_openllmetry, play_langgraph, supports=frozenset({"parallel", "budget", "nested"})),
    Family("openai-agents-openinference", "openai-agents", "openinference-instrumentation-openai-agents",
           setup_agents_openinference, play_agents, supports=frozenset({"parallel", "budget", "nested", "session"}),
           captures=frozenset({"content"})),  # writes no finish reason on any span
    Family("openai-agents-otel-v2", "openai-agents", "opentelemetry-instrumentation-openai-agents-v2",
           setup_agents_otel_v2, play_agents, supports=frozenset({"parallel", "budget", "nested"}),
           captures=frozenset({"content"})),  # writes no finish reason on any span
    *[Family(f"openai-v2-{mode}", "openai", "opentelemetry-instrumentation-openai-v2", openai_v2_setup(mode),
             play_openai_loop, supports=frozenset({"parallel", "budget"}), content=mode,
             captures=frozenset({"finish_reasons"} | ({"content"} if mode != "off" else set())),
             extras={"util": "opentelemetry-util-genai"})
      for mode in ("span_only", "event_only", "span_and_event", "off")],
    Family("smolagents-openinference", "smolagents", "openinference-instrumentation-smolagents",
           setup_smolagents, play_smolagents, supports=frozenset({"parallel", "budget", "session"}), adapt=smolagents_turn,
           captures=frozenset({"content"}),  # its LLM spans carry no llm.finish_reason
           skip=frozenset({"context_overflow"}),
           why_skipped="a ToolCallingAgent answers only through its final_answer tool call, so a cut-off text "
                       "answer is a parsing error it retries, not an answer"),
    Family("pydantic-ai-genai", "pydantic-ai-slim", "pydantic-ai-slim",
           setup_pydantic_ai, play_pydantic_ai, supports=frozenset({"parallel", "budget"})),
]}
