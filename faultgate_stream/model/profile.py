"""What the gate's drift, the sessions stage and judge routing read of a run, beyond its
checks' results: its shape, its session and its task. Worked out in Python from the run's
spans (``verdict/profile.py``) only when one of them is configured, so a service without
them pays nothing for it.

A **shape** is one value per dimension, in ``DIMENSIONS`` order, each a short bounded
string (a category, never a number), so that runs are counted per category and two
distributions of runs compared category by category (``gate/drift.py``):

- ``tools``: the tool-sequence class: the tools called, in start order, with consecutive
  calls of one tool written once (``search>fetch>search``); past ``MAX_SEGMENTS`` segments
  the rest is ``>…``; ``(none)`` for a run that called no tool.
- ``steps``: the number of tool calls, bucketed by powers of two (``0``, ``1``, ``2-3``,
  ``4-7``, ... ``64+``).
- ``errors``: tool calls that failed (the span said so, or the result is an error as the
  checks read it), ``0``, ``1``, ``2``, ``3+``.
- ``retries``: tool calls that call the same tool as the call just before, which failed,
  ``0``, ``1``, ``2``, ``3+``.
- ``tokens``: the run's input plus output tokens, bucketed by powers of two from 1k
  (``<1k``, ``1k-2k``, ``2k-4k``, ... ``512k+``); ``""`` (not counted in this dimension)
  when no span recorded usage: an instrumentation that stopped recording tokens is not a
  change in the agent.

Buckets are coarse on purpose: a category per exact count would spread a window of runs
too thin for any test to see a shift.
"""
from __future__ import annotations

from typing import NamedTuple

DIMENSIONS = ("tools", "steps", "errors", "retries", "tokens")
NO_TOOLS = "(none)"
# Segments of a tool sequence kept: longer sequences share their first ones' class, so
# loops of different lengths count as one class (``steps`` tells their lengths apart).
MAX_SEGMENTS = 6
# A tool's name as it appears in a class: names are the sender's and unbounded.
MAX_TOOL_NAME = 48
COUNT_CAP = 3          # errors and retries: 0, 1, 2, 3+
STEPS_CAP = 64         # 64+ tool calls is one bucket
TOKENS_CAP_K = 512     # 512k+ tokens is one bucket


def steps_bucket(n: int) -> str:
    if n < 2:
        return str(max(n, 0))
    if n >= STEPS_CAP:
        return f"{STEPS_CAP}+"
    lo = 1 << (n.bit_length() - 1)
    return f"{lo}-{2 * lo - 1}"


def count_bucket(n: int) -> str:
    return f"{COUNT_CAP}+" if n >= COUNT_CAP else str(n)


def tokens_bucket(tokens: float | None) -> str:
    if tokens is None:
        return ""
    k = tokens / 1000.0
    if k < 1:
        return "<1k"
    if k >= TOKENS_CAP_K:
        return f"{TOKENS_CAP_K}k+"
    lo = 1 << (int(k).bit_length() - 1)
    return f"{lo}k-{2 * lo}k"


def tool_class(tools: list[str]) -> str:
    """The tool-sequence class of a run's tool names in start order."""
    segments: list[str] = []
    for t in tools:
        name = t[:MAX_TOOL_NAME] or "?"
        if not segments or segments[-1] != name:
            if len(segments) == MAX_SEGMENTS:
                return ">".join(segments) + ">…"
            segments.append(name)
    return ">".join(segments) if segments else NO_TOOLS


class RunProfile(NamedTuple):
    """A run's shape, session and task (module docstring)."""

    shape: tuple[str, ...]          # one value per DIMENSIONS entry
    session: str = ""               # session.id, else gen_ai.conversation.id; "" for none
    session_end: bool = False       # the run said its session ended (sessions.end_attribute)
    task: str = ""                  # a digest of the user's request (folded), "" when none was captured
    answered: bool = False          # the run gave a final answer
    # the monotonic session attributes this run carried (sessions.monotonic), by name
    attrs: tuple[tuple[str, float], ...] = ()
