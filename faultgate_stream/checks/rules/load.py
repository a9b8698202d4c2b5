"""A rules file: checks written as CEL expressions over a span or a run, no code.

```yaml
- name: sql_drop                     # the check's name: a report column, a metric label
  level: span                        # span (fires early, on the span) or run (at the verdict)
  tools: [run_sql]                   # optional, span rules: only these tools' spans are looked at
  when: 'span.args.query.matches("(?i)\\bdrop\\s+table\\b")'
  severity: hard                     # hard (default), soft or warn
  reason: a SQL tool was called with DROP TABLE
- name: planner_skipped_retrieval
  level: run
  when: '"plan" in run.calls && !("retrieve" in run.calls)'
  reason: the planner never consulted the retriever
```

A span rule sees ``span`` (the fields of ``api.SpanView``: ``tool``, ``args`` as a map,
``status``, ``name``, ``attributes["key"]`` and so on), a run rule ``run`` (the fields of
``api.RunView``: ``agent``, ``steps`` as a list of maps, ``calls`` counting the steps by
tool, ``prompt``, ``answer`` ...). Every expression is compiled and type-checked when the
file loads: a syntax or type error, an unknown variable, an expression that is not true or
false, or a ``matches`` pattern RE2 refuses, refuses the whole file, naming the rule, the
line and column, and the cause. Attributes are named as literals (``attributes["key"]``), so
the live reader knows to keep them.
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any, NamedTuple

from faultgate_stream.checks.plugins.adapt import RUN_FIELDS, SPAN_FIELDS, STEP_FIELDS
from faultgate_stream.checks.rules.engine import Engine, Program
from faultgate_stream.model.errors import InputError
from faultgate_stream.model.verdict import Severity

NAME = re.compile(r"[a-z][a-z0-9_.\-]{0,63}")
KEYS = ("name", "when", "level", "severity", "reason", "tools", "description")
LEVELS = ("span", "run")
# A rules file is read whole and compiled at load; past this many rules it is refused.
MAX_RULES = 500
MAX_EXPRESSION_CHARS = 4096

_DOTTED = re.compile(r"\.\s*([A-Za-z_]\w*)")
_STRING = r"""(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')"""
_ATTR_INDEX = re.compile(r"\battributes\s*\[\s*" + _STRING + r"\s*\]")
_ATTR_IN = re.compile(_STRING + r"\s+in\s+(?:[A-Za-z_]\w*\s*\.\s*)?attributes\b")
_ATTR = re.compile(r"\battributes\b")


class Rule(NamedTuple):
    name: str
    when: str
    level: str
    severity: Severity
    reason: str
    tools: frozenset[str] | None
    description: str
    program: Program             # as the evaluator runs it
    fields: frozenset[str]       # of the span or run it names; empty: all
    attributes: frozenset[str]   # span attributes it names


class RulesFile(NamedTuple):
    path: str
    digest: str
    rules: tuple[Rule, ...]
    engine: Engine


def load_rules(path: str) -> RulesFile:
    """The rules of ``path`` (YAML or JSON), compiled. Raises ``InputError`` listing every
    problem, each with the rule's place and name."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise InputError(f"rules {path}: cannot read it: {e.strerror or e}") from None
    digest = hashlib.sha256(raw).hexdigest()[:16]
    doc = _parse(raw, path)
    items = doc.get("rules") if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise InputError(f"rules {path}: must be a list of rules (or a mapping with `rules:`)")
    if len(items) > MAX_RULES:
        raise InputError(f"rules {path}: {len(items)} rules, at most {MAX_RULES}")
    engine = Engine()
    rules, problems, seen = [], [], set()
    for i, item in enumerate(items):
        try:
            r = _rule(item, i, engine)
        except InputError as e:
            problems.append(f"rules {path}: {e}")
            continue
        if r.name in seen:
            problems.append(f"rules {path}: rules[{i}] ({r.name}): the name is taken by an earlier rule")
            continue
        seen.add(r.name)
        rules.append(r)
    if problems:
        raise InputError("\n".join(problems))
    return RulesFile(path, digest, tuple(rules), engine)


def _parse(raw: bytes, path: str) -> Any:
    text = raw.decode("utf-8", errors="replace")
    if path.endswith(".json"):
        try:
            return json.loads(text)
        except ValueError as e:
            raise InputError(f"rules {path}: not JSON: {e}") from None
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise InputError(f"rules {path}: not YAML: {e}") from None


def _rule(item: Any, i: int, engine: Engine) -> Rule:
    from faultgate_stream.checks.plugins.load import reserved_names

    where = f"rules[{i}]"
    if not isinstance(item, dict):
        raise InputError(f"{where}: must be a mapping with name and when")
    name = item.get("name")
    if isinstance(name, str):
        where = f"rules[{i}] ({name})"
    unknown = sorted(set(item) - set(KEYS))
    if unknown:
        raise InputError(f"{where}: unknown key {unknown[0]!r}; a rule has {', '.join(KEYS)}")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise InputError(f"{where}: name must be lower-case letters, digits and _.- (at most 64, a letter first), "
                         f"not {name!r}")
    if name in reserved_names():
        raise InputError(f"{where}: the name {name!r} is a built-in check's; choose another")
    level = item.get("level", "span")
    if level not in LEVELS:
        raise InputError(f"{where}: level must be span or run, not {level!r}")
    severity = item.get("severity", "hard")
    if severity not in ("hard", "soft", "warn"):
        raise InputError(f"{where}: severity must be hard, soft or warn, not {severity!r}")
    reason = item.get("reason", name)
    description = item.get("description", "")
    if not isinstance(reason, str) or not isinstance(description, str):
        raise InputError(f"{where}: reason and description must be text")
    tools = item.get("tools")
    if tools is not None:
        if level != "span":
            raise InputError(f"{where}: tools applies to span rules only")
        if not isinstance(tools, list) or not tools or not all(isinstance(t, str) and t for t in tools):
            raise InputError(f"{where}: tools must be a list of tool names")
        tools = frozenset(tools)
    when = item.get("when")
    if not isinstance(when, str) or not when.strip():
        raise InputError(f"{where}: when must be a CEL expression")
    if len(when) > MAX_EXPRESSION_CHARS:
        raise InputError(f"{where}: when is {len(when)} characters, at most {MAX_EXPRESSION_CHARS}")
    other = "run" if level == "span" else "span"
    if re.search(rf"\b{other}\b", when) and not re.search(rf"\b{level}\b", when):
        raise InputError(f"{where}: a {level} rule reads `{level}`, not `{other}` (set level: {other}?)")
    program = engine.compile(when, where)
    return Rule(name, when, level, Severity(severity), reason, tools, description, program,
                _fields(when, level), _attributes(when, where))


def _fields(when: str, level: str) -> frozenset[str]:
    """The fields of ``span`` or ``run`` an expression may read: every name after a dot
    that is one (a superset is harmless), or all when it uses the variable whole."""
    if re.search(rf"\b{level}\b(?!\s*\.)", when):
        return frozenset()
    known = SPAN_FIELDS.keys() | {"attributes"} if level == "span" else {*RUN_FIELDS, *SPAN_FIELDS, *STEP_FIELDS,
                                                                          "attributes"}
    return frozenset(m for m in _DOTTED.findall(when) if m in known)


def _attributes(when: str, where: str) -> frozenset[str]:
    keys = [a or b for a, b in _ATTR_INDEX.findall(when)] + [a or b for a, b in _ATTR_IN.findall(when)]
    if len(_ATTR.findall(when)) > len(keys):
        raise InputError(f"{where}: name each attribute it reads as a literal, attributes[\"key\"] (or "
                         f"\"key\" in attributes): the live service keeps only the attributes rules name")
    return frozenset(keys)
