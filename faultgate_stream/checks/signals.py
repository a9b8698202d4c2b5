"""What tool results and spans say about failure, shared by several checks.

The heuristics are faultgate 0.4.1's, so the two tools agree on what an error or an
empty result is.
"""
from __future__ import annotations

import json
import re
from typing import Any

from faultgate_stream.model.reason import quoted, reason
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.model.run import Run
from faultgate_stream.read.payload import loads

# How a tool result announces a failure in plain text.
ERROR_PREFIXES = ("Error:", "ERROR:", "Traceback (most recent call last)",
                  "An error occurred while parsing tool arguments")
EXIT_CODE_KEYS = ("exit_code", "return_code", "exitcode", "returncode", "exit_status")
COUNT_KEYS = ("n_candidates", "count", "n_results", "total")
_WS = re.compile(r"\s+")
_STEP_ERRORS = "signals.step_errors"  # key of step_errors' answer in Run.derived
# json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False) without building
# the encoder on every call: 1.6 us against 2.3 us on a search query's arguments.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


def squash(s: str) -> str:
    """Whitespace folded: two results that differ only in layout are the same result.

    The same string as ``_WS.sub(" ", s).strip()``: the regex's whitespace class and
    ``str.split()`` both take exactly the characters ``str.isspace()`` accepts (a test
    checks every code point), and this form is several times faster on a tool result."""
    return " ".join(s.split())


def _json_objects(s: str) -> list[dict[str, Any]]:
    """The JSON objects a result is, or, for a list of ``{"text": "{...}"}`` parts (MCP
    content), that each part's text is."""
    if s.startswith("{") and s.endswith("}"):
        try:
            d = loads(s)
        except ValueError:
            return []
        return [d] if isinstance(d, dict) else []
    if s.startswith("[") and s.endswith("]"):
        try:
            items = loads(s)
        except ValueError:
            return []
        out = []
        for item in items if isinstance(items, list) else ():
            text = item.get("text") if isinstance(item, dict) else None
            if isinstance(text, str) and text.strip().startswith("{") and text.strip().endswith("}"):
                try:
                    sub = loads(text.strip())
                except ValueError:
                    continue
                if isinstance(sub, dict):
                    out.append(sub)
        return out
    return []


def structural_error(result: str) -> str:
    """Why a tool result is an error ("" when it is not): a JSON ``error`` field, a
    non-zero exit code, a ``<tool_use_error>`` tag, or an error prefix."""
    s = result.strip()
    if not s:
        return ""
    for obj in _json_objects(s):
        if obj.get("error"):
            return reason("JSON top-level error: ", quoted(str(obj["error"]), 80))
        for k in EXIT_CODE_KEYS:
            if k in obj:
                try:
                    if int(obj[k]) != 0:
                        return f"Non-zero {k}: {obj[k]}"
                except (TypeError, ValueError):
                    pass
    if "<tool_use_error>" in s and "</tool_use_error>" in s:
        return "<tool_use_error> tag present"
    if s.startswith(ERROR_PREFIXES):  # one test for the common result that starts with none
        for p in ERROR_PREFIXES:
            if s.startswith(p):
                return f"Response starts with '{p}'"
    return ""


def step_errors(run: Run) -> tuple[str, ...]:
    """``structural_error`` of each step's result, in step order, worked out once per run
    for every check that asks. A run repeats results (the same empty search, the same
    error), so each distinct result is decoded once."""
    errors = run.derived.get(_STEP_ERRORS)
    if errors is None:
        results = [st.result for st in run.steps]
        known = {r: structural_error(r) for r in set(results)}
        errors = run.derived[_STEP_ERRORS] = tuple([known[r] for r in results])
    return errors


def empty_result(result: str) -> bool:
    """A tool result that carried nothing back: empty, [], {}, or a JSON body whose count
    is 0 or whose lists are all empty."""
    s = result.strip()
    if s in ("", "[]", "{}", "null", "None"):
        return True
    try:
        d = loads(s)
    except ValueError:
        return False
    if isinstance(d, list):
        return not d
    if isinstance(d, dict):
        for k in COUNT_KEYS:
            if k in d:
                return d[k] == 0
        lists = [v for v in d.values() if isinstance(v, list)]
        return bool(lists) and all(not v for v in lists)
    return False


def span_error(s: SpanRecord) -> str:
    """Why the span itself says it failed ("" when it does not)."""
    if s.status_code == 2:
        return "Span status error: Code 2"
    if s.error_type:
        return f"Span error: {s.error_type}"
    return ""


def canonical_arguments(args: str) -> str:
    """Arguments in one canonical form, so the same call written twice compares equal."""
    s = args.strip()
    if (s[:1], s[-1:]) in (("{", "}"), ("[", "]")):
        try:
            return _CANONICAL(loads(s))
        except ValueError:
            pass
    return _WS.sub(" ", s)
