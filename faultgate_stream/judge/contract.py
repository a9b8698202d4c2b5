"""What a judge is. faultgate's contract, so a judge written for one works with the other:
a ``name``, a ``budget`` (the most characters of rendered run it can read; ``None`` for no
limit), ``remote`` (the rendered run leaves the machine, so it is masked first) and
``ask(state, question)`` answering with detected, confidence and reason."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Judgement:
    detected: bool
    confidence: float
    reason: str
    prompt_tokens: int | None = None  # what the endpoint said it read, when it said


class Judge(Protocol):
    name: str
    budget: int | None
    remote: bool

    def ask(self, state: str, question: str) -> Judgement:
        """Raises ``JudgeError`` when no answer could be had (unreachable, timed out, refused)."""


class JudgeError(Exception):
    """The judge gave no usable answer: the question stays undecided, never "not detected"."""


class JudgeTimeout(JudgeError):
    """The judge did not answer within its timeout (counted apart from other errors live)."""


@dataclass(frozen=True, slots=True)
class Question:
    """A judge check: the check name its result is reported under, and what it asks."""

    check: str
    description: str
    text: str


# faultgate's one judge check, asked in our own words.
WRONG_DIRECTION = Question(
    "wrong_direction",
    "On a multi-hop task, the agent walked the dependency chain backwards (needs --judge).",
    "The task is multi-hop: each entity it names leads to the next through a link. Did the agent search those "
    "links in the reverse direction, starting from the end of the chain instead of following it from the "
    "entity the task gives? Answer detected=true only if it did.",
)
QUESTIONS = {q.check: q for q in (WRONG_DIRECTION,)}
