"""The judge checks a trajectory spec may name (``judge: [wrong_direction]``), by name only.

Their questions, and the judges that answer them, live in ``judge/``, a later stage than
this one; the names are here so that a spec is validated when it is loaded, like every
other key (a misspelt judge check would otherwise be a question never asked, looking
like one answered). ``tests/judge`` keeps this list equal to ``judge.contract.QUESTIONS``.
"""
from __future__ import annotations

JUDGE_CHECKS: tuple[str, ...] = ("wrong_direction",)
