"""DSPy ReAct (dspy's ``ReAct`` module over LiteLLM) through openinference-instrumentation-dspy,
in tests/conformance/.venv-dspy."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .capture import Capture
from .families import API_KEY, MODEL, STEP_BUDGET, Family
from .scenarios import TOOLS, WORKERS, Scenario
from .scripted_model import ScriptedModel, Turn, say


def _lm(model: ScriptedModel) -> Any:
    import dspy
    # num_retries=0: LiteLLM's own retries would replay a scripted turn; cache off: every run
    # asks the model
    return dspy.LM(f"openai/{MODEL}", api_base=model.base_url, api_key=API_KEY, num_retries=0, cache=False)


def play_dspy(s: Scenario, model: ScriptedModel) -> Callable[[], None]:
    import dspy

    tools: list[Any] = list(TOOLS)
    if "nested" in s.needs or "supervisor" in s.needs:
        for name, f in WORKERS.items():
            inner = dspy.ReAct("question -> answer", tools=[f], max_iters=STEP_BUDGET)

            def ask(input: str, inner: Any = inner) -> str:  # noqa: A002 (the tool's parameter name)
                return str(inner(question=input).answer)
            tools.append(dspy.Tool(ask, name=name, desc=f"Ask the {name} agent.", args={"input": {"type": "string"}}))
    # max_iters is ReAct's own step budget: past it the trajectory goes to the answer extractor
    agent = dspy.ReAct("question -> answer", tools=tools, max_iters=STEP_BUDGET)
    lm = _lm(model)

    def invoke() -> None:
        with dspy.context(lm=lm, adapter=dspy.ChatAdapter()):
            agent(question=s.prompt)
    return invoke


def _fields(**fields: str) -> str:
    """A reply in DSPy's ChatAdapter format: each output field under its ``[[ ## name ## ]]``."""
    return "\n\n".join(f"[[ ## {k} ## ]]\n{v}" for k, v in fields.items()) + "\n\n[[ ## completed ## ]]"


def dspy_turns(t: Turn) -> tuple[Turn, ...]:
    """ReAct asks the model for one tool per turn as text fields, ends with its ``finish``
    tool, then asks its extractor for the answer: a call is one such turn, an answer two."""
    if t.calls:
        (name, args), = t.calls
        return (say(_fields(next_thought=f"I should call {name}.", next_tool_name=name,
                            next_tool_args=json.dumps(args))),)
    return (say(_fields(next_thought="I can answer now.", next_tool_name="finish", next_tool_args="{}")),
            say(_fields(reasoning="The observations answer the question.", answer=t.text),
                finish_reason=t.finish_reason))


def setup_dspy(c: Capture) -> None:
    import os
    # DSPy (and LiteLLM) fetch a model cost map from the internet unless told to use the
    # bundled one: nothing leaves 127.0.0.1
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "true"
    from openinference.instrumentation.dspy import DSPyInstrumentor
    DSPyInstrumentor().instrument(tracer_provider=c.tracer_provider)


FAMILIES = {f.name: f for f in [
    Family("dspy-openinference", "dspy", "openinference-instrumentation-dspy", setup_dspy, play_dspy,
           supports=frozenset({"nested", "supervisor"}), adapt=dspy_turns,
           captures=frozenset({"content"}),  # its LM spans carry no llm.finish_reason
           skip=frozenset({"context_overflow"}),
           why_skipped="parallel calls: ReAct calls one tool a turn; the step budget: at max_iters ReAct still asks "
                       "its extractor for an answer, so the run answers; a cut-off reply: the adapter fails to parse "
                       "it and asks again in another format"),
]}
