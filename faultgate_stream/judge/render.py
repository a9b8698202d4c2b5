"""A run as the text a judge reads: the facts that decide most questions first (agent,
prompt, step count, how it ended, the answer), then the steps. Within a budget the steps
are shortened and the middle ones left out: setup shows at the head, loops at the tail."""
from __future__ import annotations

from faultgate_stream.model.run import Run

HEAD_STEPS = 2
ELIDED = "... {n} steps left out ..."
PROMPT_CHARS, ANSWER_CHARS, FIELD_CHARS = 600, 400, 160


def _cut(text: str, limit: int | None) -> str:
    text = " ".join(text.split())
    return text if limit is None or len(text) <= limit else text[:limit - 1] + "…"


def render(run: Run, budget: int | None = None) -> str:
    short = budget is not None
    head = [f"Agent: {run.agent or 'unknown'}",
            f"Prompt: {_cut(run.prompt, PROMPT_CHARS if short else None)}",
            f"Steps used: {len(run.steps)}",
            f"Termination: {run.termination or 'unknown'}",
            f"Final answer: {_cut(run.answer, ANSWER_CHARS if short else None) or '(none)'}"]
    field = FIELD_CHARS if short else None
    lines = [f"Step {st.index}: {st.tool} {_cut(st.arguments, field)} -> {_cut(st.result, field)}"
             + ("" if st.ok else " [failed]") for st in run.steps]
    if budget is None:
        return "\n".join(head + lines)
    room = budget - sum(len(h) + 1 for h in head)
    kept = lines[:HEAD_STEPS]
    room -= sum(len(x) + 1 for x in kept)
    marker = len(ELIDED.format(n=len(lines))) + 1
    tail: list[str] = []
    for line in reversed(lines[HEAD_STEPS:]):
        if room - len(line) - 1 < marker:
            break
        tail.append(line)
        room -= len(line) + 1
    tail.reverse()
    left_out = len(lines) - len(kept) - len(tail)
    text = "\n".join(head + kept + ([ELIDED.format(n=left_out)] if left_out else []) + tail)
    return text[:budget]
