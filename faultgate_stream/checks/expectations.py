"""Files of per-scenario expectations: golden answers and outcomes.

Both are keyed like faultgate's: by scenario key (``faultgate.scenario``, else
``gen_ai.agent.id``, else the prompt hash) or by the prompt text itself, so one file
serves both tools.
"""
from __future__ import annotations

import json
import os
from typing import Any

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.run import Run


def _load_object(path: str | os.PathLike, what: str, value_type: type, shape: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            d = json.loads(f.read())
    except OSError as e:
        raise InputError(f"{what}: cannot read {path} ({e.strerror or e})") from None
    except ValueError as e:
        raise InputError(f"{what}: {path} is not JSON ({e})") from None
    if not isinstance(d, dict):
        raise InputError(f"{what}: {path}: expected a JSON object of {shape}")
    for k, v in d.items():
        if not isinstance(v, value_type):
            raise InputError(f"{what}: {path}: value of {k[:60]!r} must be {value_type.__name__}, not {type(v).__name__}")
    return d


class Golden(dict[str, str]):
    """Expected final answers."""

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Golden":
        return cls(_load_object(path, "golden", str, "{scenario key or prompt: expected answer}"))

    def expected(self, run: Run) -> str | None:
        return self.get(run.scenario) or self.get(run.prompt)


class Outcomes(dict[str, bool]):
    """Task outcomes from the user's own evaluator (e.g. tau2 reward == 1)."""

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Outcomes":
        return cls(_load_object(path, "outcomes", bool, "{scenario key or prompt: true | false}"))

    def outcome(self, run: Run) -> bool | None:
        for k in (run.scenario, run.prompt):
            if k in self:
                return self[k]
        return None
