"""A trajectory spec: constraints on the path a run took, in luckrate 0.3.0's keys.

A spec describes what must, must not and may happen, never the exact sequence, so it stays
cheap to write and tolerant of agents that vary legitimately:

=============  ==============================  ===========================================
key            value                           meaning
=============  ==============================  ===========================================
tools          list of tool names              the legal vocabulary; any other call is
                                               hallucinated
required       list of tool names              each must be called somewhere
forbidden      list of tool names              none may be called
before         list of ``[a, b]`` pairs        the first ``a`` precedes the first ``b``
max_steps      positive whole number           the step budget
no_repeat      true / false                    no identical call repeating successful work
ground         true / false (default true)     flag identifier-shaped arguments that trace
                                               to nothing in the input or earlier results
untrusted,     lists of tool names, both or    a privileged call must not consume data
privileged     neither                         only an untrusted tool returned
secrets        true / false (default true)     flag vendor-prefixed credentials in calls
judge          list of judge check names       ours, not luckrate's: judge questions asked
                                               live of the runs this spec holds, after their
                                               rule verdict (``judge`` config section)
=============  ==============================  ===========================================

An empty list is the same as leaving the key out, as in luckrate: ``tools: []`` sets no
vocabulary. A ``null`` value (``max_steps:`` with nothing after it in YAML) is also absent.

Validation reports every problem at once, each prefixed with where it is
(``spec: required[1]: 'refnd' is not in tools``), the way the service config does.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any


from faultgate_stream.checks.documents import load_document
from faultgate_stream.checks.judged import JUDGE_CHECKS
from faultgate_stream.model.errors import InputError

NAME_LISTS = ("tools", "required", "forbidden", "untrusted", "privileged")
FLAGS = ("no_repeat", "ground", "secrets")


class SpecError(InputError):
    """A spec that cannot be used. ``problems`` holds one line per problem."""

    def __init__(self, problems: list[str], source: str | Path | None = None) -> None:
        where = f" {source}" if source is not None else ""
        super().__init__(f"invalid trajectory spec{where}:\n  " + "\n  ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Spec:
    """A validated spec. Built by ``Spec.from_mapping`` or ``load_spec``, or directly:
    constructing one validates it the same way, so no invalid ``Spec`` exists."""

    tools: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()
    before: tuple[tuple[str, str], ...] = ()
    max_steps: int | None = None
    no_repeat: bool = False
    ground: bool = True
    untrusted: tuple[str, ...] = ()
    privileged: tuple[str, ...] = ()
    secrets: bool = True
    judge: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        values, problems = _normalise({f.name: getattr(self, f.name) for f in fields(self)})
        if problems:
            raise SpecError(problems)
        for k, v in values.items():
            object.__setattr__(self, k, v)

    @classmethod
    def from_mapping(cls, raw: Any, source: str | Path | None = None) -> "Spec":
        """The spec a decoded JSON or YAML document describes."""
        if not isinstance(raw, Mapping):
            raise SpecError([f"spec: must be a mapping of constraint keys, not {type(raw).__name__}"], source)
        known = [f.name for f in fields(cls)]
        problems = [f"spec: {k}: unknown key; known: {', '.join(known)}" for k in raw if k not in known]
        values, more = _normalise({k: v for k, v in raw.items() if k in known and v is not None})
        problems += more
        if problems:
            raise SpecError(problems, source)
        return cls(**values)


def load_spec(path: str | Path) -> Spec:
    """The spec in a ``.json`` file, or a YAML file (any other name). Raises ``InputError``."""
    p = Path(path)
    raw = load_document(p)
    return Spec.from_mapping({} if raw is None else raw, p)


def _names(key: str, v: Any, problems: list[str]) -> tuple[str, ...]:
    if isinstance(v, str) or not isinstance(v, (list, tuple)):
        # the common slip: `required: check_policy` for `required: [check_policy]`
        problems.append(f"spec: {key}: must be a list of tool names, not {v!r}")
        return ()
    out = []
    for i, x in enumerate(v):
        if isinstance(x, str) and x:
            out.append(x)
        else:
            problems.append(f"spec: {key}[{i}]: must be a tool name (a non-empty string), not {x!r}")
    return tuple(out)


def _judge_checks(v: Any, problems: list[str]) -> tuple[str, ...]:
    if isinstance(v, str) or not isinstance(v, (list, tuple)):
        problems.append(f"spec: judge: must be a list of judge check names, not {v!r}")
        return ()
    for i, x in enumerate(v):
        if x not in JUDGE_CHECKS:
            problems.append(f"spec: judge[{i}]: unknown judge check {x!r}; available: {', '.join(JUDGE_CHECKS)}")
    return tuple(x for x in v if x in JUDGE_CHECKS)


def _pairs(v: Any, problems: list[str]) -> tuple[tuple[str, str], ...]:
    if isinstance(v, str) or not isinstance(v, (list, tuple)):
        problems.append(f"spec: before: must be a list of [a, b] pairs, not {v!r}")
        return ()
    out = []
    for i, pair in enumerate(v):
        if (isinstance(pair, (list, tuple)) and len(pair) == 2
                and all(isinstance(x, str) and x for x in pair)):
            if pair[0] == pair[1]:
                # always satisfied, so certainly not what the author meant
                problems.append(f"spec: before[{i}]: {pair[0]!r} cannot come before itself")
            else:
                out.append((pair[0], pair[1]))
        else:
            problems.append(f"spec: before[{i}]: must be a pair [a, b] of tool names, not {pair!r}")
    return tuple(out)


def _normalise(raw: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Each present key's value in its stored form, and every problem found."""
    problems: list[str] = []
    values: dict[str, Any] = {}
    for key in NAME_LISTS:
        if key in raw:
            values[key] = _names(key, raw[key], problems)
    if "before" in raw:
        values["before"] = _pairs(raw["before"], problems)
    if "judge" in raw:
        values["judge"] = _judge_checks(raw["judge"], problems)
    for key in FLAGS:
        if key in raw:
            if isinstance(raw[key], bool):
                values[key] = raw[key]
            else:
                problems.append(f"spec: {key}: must be true or false, not {raw[key]!r}")
    if raw.get("max_steps") is not None:
        m = raw["max_steps"]
        if isinstance(m, int) and not isinstance(m, bool) and m > 0:
            values["max_steps"] = m
        else:
            problems.append(f"spec: max_steps: must be a positive whole number, not {m!r}")
    problems += _consistency(values)
    return values, problems


def _consistency(v: Mapping[str, Any]) -> list[str]:
    problems = []
    untrusted, privileged = v.get("untrusted", ()), v.get("privileged", ())
    # Taint needs both sides: one alone would check nothing while looking like it does.
    if untrusted and not privileged:
        problems.append("spec: untrusted: needs privileged (the calls untrusted data must not reach)")
    if privileged and not untrusted:
        problems.append("spec: privileged: needs untrusted (the tools whose results are not to be trusted)")
    required = set(v.get("required", ()))
    for i, name in enumerate(v.get("forbidden", ())):
        if name in required:
            problems.append(f"spec: forbidden[{i}]: {name!r} is also required; no run can pass")
    # The typo guard. A misspelt name in `required` is indistinguishable from an agent that
    # never called the tool: every run would report a violation the agent did not commit,
    # and the author would hunt the wrong bug. So a spec with a vocabulary may name only
    # tools in it.
    vocab = set(v.get("tools", ()))
    if vocab:
        for key in ("required", "forbidden", "untrusted", "privileged"):
            for i, name in enumerate(v.get(key, ())):
                if name not in vocab:
                    problems.append(f"spec: {key}[{i}]: {name!r} is not in tools")
        for i, pair in enumerate(v.get("before", ())):
            for j, name in enumerate(pair):
                if name not in vocab:
                    problems.append(f"spec: before[{i}][{j}]: {name!r} is not in tools")
    return problems
