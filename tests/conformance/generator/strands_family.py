"""AWS Strands Agents through its own OpenTelemetry tracer (strands.telemetry), in
tests/conformance/.venv-strands: the default conventions (message content in span events)
and ``gen_ai_latest_experimental`` (content in the latest GenAI attributes)."""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .capture import Capture
from .families import API_KEY, MODEL, STEP_BUDGET, Family
from .scenarios import TOOLS, WORKERS, Scenario
from .scripted_model import ScriptedModel, Turn, call, say


def _model(model: ScriptedModel, stream: bool) -> Any:
    from strands.models.openai import OpenAIModel
    # config "stream": Strands streams by default; the other scenarios are played unstreamed
    return OpenAIModel(client_args={"base_url": model.base_url, "api_key": API_KEY, "max_retries": 0},
                       model_id=MODEL, stream=stream)


def _agent(name: str, llm: Any, tools: list[Any], hooks: list[Any] | None = None) -> Any:
    from strands import Agent
    return Agent(name=name, model=llm, tools=tools, callback_handler=None, hooks=hooks,
                 system_prompt="Help the user; use the tools.")


class RetryFailedTools:
    """Strands' own tool retry: an ``AfterToolCallEvent`` hook that sets ``retry`` runs the
    tool again and discards the failed result (one span per attempt); here a failed call is
    tried once more."""

    def __init__(self) -> None:
        self.retried: set[str] = set()

    def register_hooks(self, registry: Any, **kwargs: Any) -> None:
        from strands.hooks import AfterToolCallEvent
        registry.add_callback(AfterToolCallEvent, self.after)

    def after(self, event: Any) -> None:
        call = event.tool_use["toolUseId"]
        if event.result.get("status") == "error" and call not in self.retried:
            self.retried.add(call)
            event.retry = True


def play_strands(s: Scenario, model: ScriptedModel) -> Callable[[], None]:
    from strands import tool
    from strands.multiagent import Swarm
    from strands.types.exceptions import MaxTokensReachedException

    llm = _model(model, "stream" in s.needs)
    tools = [tool(f) for f in TOOLS]
    if "handoff" in s.needs:
        triage = _agent("triage", llm, [])
        workers = [_agent(n, llm, [tool(f)]) for n, f in WORKERS.items()]
        swarm = Swarm([triage, *workers], entry_point=triage, max_handoffs=4, max_iterations=6)
        return lambda: swarm(s.prompt)
    if "nested" in s.needs or "supervisor" in s.needs:
        for name, f in WORKERS.items():
            tools.append(_agent(name, llm, [tool(f)]).as_tool(name=name, description=f"Ask the {name} agent."))
    agent = _agent("assistant", llm, tools, hooks=[RetryFailedTools()] if "retry" in s.needs else None)

    def invoke() -> None:
        try:
            # limits={"turns": N} is Strands' own step budget: the run stops with stop_reason
            # "limit_turns", no exception and no answer
            agent(s.prompt, limits={"turns": STEP_BUDGET})
        except MaxTokensReachedException:
            # a "length" finish reason: Strands raises rather than answer with the cut text
            if s.name not in ("context_overflow", "streamed_context_overflow"):
                raise
    return invoke


def strands_hand_off(to: str) -> tuple[Turn, ...]:
    # the swarm moves on when the agent that called handoff_to_agent ends its turn
    return (call("handoff_to_agent", agent_name=to, message="The user needs you.", context={}),
            say(f"Handing you over to the {to}."))


def strands_setup(latest: bool) -> Callable[[Capture], None]:
    def setup(c: Capture) -> None:
        if latest:
            os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
        else:
            os.environ.pop("OTEL_SEMCONV_STABILITY_OPT_IN", None)
        # Strands' tracer uses the global provider, which Capture set: nothing else to do
        from strands.telemetry import StrandsTelemetry
        StrandsTelemetry(tracer_provider=c.tracer_provider)
    return setup


STRANDS = frozenset({"parallel", "budget", "nested", "supervisor", "handoff", "stream", "retry"})
FAMILIES = {f.name: f for f in [
    Family("strands-native", "strands-agents", "strands-agents", strands_setup(False), play_strands,
           supports=STRANDS, hand_off=strands_hand_off, content="span_events"),
    Family("strands-native-latest", "strands-agents", "strands-agents", strands_setup(True), play_strands,
           supports=STRANDS, hand_off=strands_hand_off, content="span_events"),
]}
