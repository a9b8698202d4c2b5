"""The Python checks that native/core/src/checks/ replaced, kept as their oracle (as
tests/read/otlp_json_oracle.py keeps the Python OTLP/JSON reader): checks/signals.py and the
five default rule checks' logic as they stood before the compiled ones, run over
tests/model/run_oracle.py's ``OracleRun``. For any run, each must give the result the
compiled check gives, byte for byte.

The classes keep their names (so results compare equal) and the package's contract
(checks/base.py); constants that did not move are the package's own.
"""
from __future__ import annotations

import json
import re
from collections.abc import Hashable, Mapping
from typing import Any

from faultgate_stream.checks.base import Check
from faultgate_stream.model.reason import quoted, reason
from faultgate_stream.model.records import (
    MISSING_FINISH, MISSING_TOOL_ARGUMENTS, MISSING_TOOL_RESULT, SpanRecord, Step,
)
from faultgate_stream.model.verdict import CheckResult
from faultgate_stream.read.payload import loads

Run = Any  # an OracleRun

# ---------------------------------------------------------------- checks/signals.py
# How a tool result announces a failure in plain text.
ERROR_PREFIXES = ("Error:", "ERROR:", "Traceback (most recent call last)",
                  "An error occurred while parsing tool arguments")
EXIT_CODE_KEYS = ("exit_code", "return_code", "exitcode", "returncode", "exit_status")
COUNT_KEYS = ("n_candidates", "count", "n_results", "total")
_WS = re.compile(r"\s+")
_STEP_ERRORS = "oracle.step_errors"  # key of step_errors' answer in Run.derived
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


def step_errors(run: Any) -> tuple[str, ...]:
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


# ---------------------------------------------------------------- checks/search_loop.py
STEP_CAP = 12
EMPTY_SHARE = 0.5
STEP_CAP_WORDS = ("step cap", "step limit", "max steps", "max_steps", "max iterations", "iteration limit")


class SearchLoop(Check):
    name = "search_loop"
    description = "Run ended with no answer at the step budget and most tool calls returned nothing."

    def finish(self, state: Any, run: Run) -> CheckResult:
        steps = run.steps
        if run.answer.strip():
            return self.result(False, "answered")
        if not steps:
            return self.result(False, "no tool calls")
        termination = run.termination.lower()
        capped = any(w in termination for w in STEP_CAP_WORDS) or len(steps) >= STEP_CAP
        # a looping run repeats its results: each distinct one is decoded once
        results = [s.result for s in steps]
        known = {r: empty_result(r) for r in set(results)}
        unseen = [bool(s.missing & MISSING_TOOL_RESULT) for s in steps]
        empty = sum([known[r] for r, u in zip(results, unseen) if not u]) / len(steps)
        if capped:
            # at the cap, the verdict turns on an answer and results the run may not have
            # recorded; results it did not record decide nothing when, empty or not, they
            # cannot move the share across the line (the last call of a run cut off by its
            # budget, whose result no later message carries)
            gap = run.answer_not_captured
            if not gap and any(unseen):
                at_most = empty + sum(unseen) / len(steps)
                if empty < EMPTY_SHARE <= at_most:
                    gap = run.steps_not_captured(MISSING_TOOL_RESULT)
            if gap:
                return self.undecided(gap)
        return self.result(capped and empty >= EMPTY_SHARE,
                           f"no answer, {len(steps)} steps{' (cap)' if capped else ''}, {empty:.0%} empty results")


# ---------------------------------------------------------------- checks/abstention.py
_INABILITY = (r"couldn.t|could not|cannot|can.t|unable to|not able to|wasn.t able to|was not able to"
              r"|did not|didn.t|failed to")
_FINDING = r"find|locate|retrieve|identify|determine|look\s?up|discover"
ABSTAIN = re.compile(
    rf"\b(?:{_INABILITY})\s+(?:\w+\s+){{0,2}}?(?:{_FINDING})\b"
    r"|\bno (?:matching |relevant )?(?:document|information|record|result|source|data)s?\b"
    r"|\b(?:information|answer|record|result|document|data)s? (?:(?:was|were|is|are) )?not (?:found|available)\b"
    r"|\bnot found\b"
    r"|\b(?:don.t|do not) (?:know|have (?:that|this|any|enough|the) information)\b",
    re.I,
)


class Abstention(Check):
    name = "abstention"
    description = "Final answer explicitly says the information could not be found."

    def finish(self, state: Any, run: Run) -> CheckResult:
        answer = run.answer.strip()
        if not answer:
            if run.answer_not_captured:
                return self.undecided(run.answer_not_captured)
            return self.result(False, "no answer")
        m = ABSTAIN.search(answer)
        return self.result(m is not None, f"answer says {m.group(0)!r}" if m else "answer does not abstain")


# ---------------------------------------------------------------- checks/repeated_call.py
MIN_REPEATS = 3
_UNSURE = None  # a call key that may equal any other


def call_key(arguments: str) -> Hashable:
    """A key that is equal for two argument texts whenever their canonical forms are, and
    cheaper to get: one decode instead of a decode and a sorted re-encode (0.9 us against
    1.8 us on a search query). ``_UNSURE`` when it cannot tell.

    Equal canonical JSON means equal decoded values, type for type, so an object's string
    members are the same; a text that is not JSON is compared in its canonical form itself.
    """
    s = arguments.strip()
    if (s[:1], s[-1:]) not in (("{", "}"), ("[", "]")):
        return canonical_arguments(s)  # plain text: cheap, and never looks like JSON
    try:
        v = loads(s)
    except ValueError:
        return _UNSURE  # its canonical form is its text, which may read like someone's JSON
    if isinstance(v, dict):
        return frozenset([(k, x) for k, x in v.items() if type(x) is str])
    return len(v) if isinstance(v, list) else _UNSURE


def tools_that_may_repeat(steps: tuple[Step, ...], squashed: list[str]) -> set[str]:
    """Tools with three calls that may share their arguments and their result. Only these
    can fire, so only their steps need canonical arguments."""
    same_result: dict[tuple[str, str], list[Step]] = {}
    for st, res in zip(steps, squashed):
        same_result.setdefault((st.tool, res), []).append(st)
    tools: set[str] = set()
    for (tool, _), group in same_result.items():
        if len(group) < MIN_REPEATS or tool in tools:
            continue
        counts: dict[Hashable, int] = {}
        for st in group:
            key = call_key(st.arguments)
            counts[key] = counts.get(key, 0) + 1
        if _UNSURE in counts or max(counts.values()) >= MIN_REPEATS:
            tools.add(tool)
    return tools


class RepeatedCall(Check):
    name = "repeated_call"
    description = "Same tool and arguments called >=3 times with identical results."

    def finish(self, state: Any, run: Run) -> CheckResult:
        steps = run.steps
        if len(steps) < MIN_REPEATS:
            if run.calls_not_captured:  # three calls may have been made, unseen
                return self.undecided(run.calls_not_captured)
            return self.result(False, "fewer than 3 tool calls")
        # A step whose arguments or result were not recorded reads as "" and would repeat
        # any other such step: its tool is judged only when all its calls were recorded.
        blind = {st.tool for st in steps if st.missing}
        if blind:
            steps = tuple(st for st in steps if st.tool not in blind)
        folded = {r: squash(r) for r in {st.result for st in steps}}
        squashed = [folded[st.result] for st in steps]
        # Only those tools are grouped: the other tools' groups hold no triple, so leaving
        # them out cannot change which group fires first.
        tools = tools_that_may_repeat(steps, squashed)
        canonical: dict[str, str] = {}  # one round trip per distinct argument text
        same_call: dict[tuple[str, str], list[int]] = {}
        for i, st in enumerate(steps):
            if st.tool not in tools:
                continue
            args = canonical.get(st.arguments)
            if args is None:
                args = canonical[st.arguments] = canonical_arguments(st.arguments)
            same_call.setdefault((st.tool, args), []).append(i)
        for (tool, args), idx in same_call.items():
            for a, b, c in zip(idx, idx[1:], idx[2:]):
                if squashed[a] == squashed[b] == squashed[c]:
                    # the arguments are masked whole before they are cut (model/reason.py)
                    return self.result(True, reason(
                        f"Tool '{tool}' with arguments ", quoted(args, 60), f" issued >= 3 times (steps "
                        f"{steps[a].index}, {steps[b].index}, {steps[c].index}) where all 3 responses are "
                        "identical after whitespace normalization."))
        if blind and any(sum(st.tool == t for st in run.steps) >= MIN_REPEATS for t in blind):
            return self.undecided(run.steps_not_captured(MISSING_TOOL_ARGUMENTS | MISSING_TOOL_RESULT))
        return self.result(False, "no repeated calls without progress")


# ---------------------------------------------------------------- checks/unrecovered_tool_error.py
class UnrecoveredToolError(Check):
    name = "unrecovered_tool_error"
    description = "A tool call produced a structural error and the tool was never used successfully afterwards."

    def __init__(self, alternatives: Mapping[str, frozenset[str]] | None = None) -> None:
        self.alternatives = dict(alternatives or {})

    def finish(self, state: Any, run: Run) -> CheckResult:
        steps = run.steps
        failed = step_errors(run)
        # A failed step is recovered when a later call to its tool succeeded, that is when
        # the tool's last successful step comes after it: one pass instead of a scan of
        # every later step for each failure.
        last_ok: dict[str, int] = {}
        for j, st in enumerate(steps):
            if not failed[j]:
                last_ok[st.tool] = j
        for i, st in enumerate(steps):
            if failed[i] and max(last_ok.get(t, -1) for t in {st.tool, *self.alternatives.get(st.tool, ())}) < i:
                return self.result(True, reason(f"Tool '{st.tool}' failed at step {st.index} (", failed[i],
                                                f") and no subsequent call to '{st.tool}' succeeded."))
        spans = run.spans
        errors = ["" if _limit_failure(s) else span_error(s) for s in spans]
        if not any(errors):
            return self._clean(run)
        # recovered: a later span that did not fail ran tool calls that all succeeded
        ran = {st.span_id for st in steps}
        ran_ok = ran - {st.span_id for st, f in zip(steps, failed) if f}
        last_good = max((j for j, s in enumerate(spans) if not errors[j] and s.span_id in ran_ok), default=-1)
        # A tool span that failed by its status alone is made good only by a later
        # successful call of the same tool (or a declared alternative): another tool working
        # afterwards leaves the call it failed undone.
        last_good_of: dict[str, int] = {}
        for j, s in enumerate(spans):
            if s.tool is not None and not errors[j] and s.span_id in ran_ok:
                last_good_of[s.tool.name] = j
        for i, err in enumerate(errors):
            if not err:
                continue
            tool = spans[i].tool
            if tool is not None:
                good = max(last_good_of.get(t, -1) for t in {tool.name, *self.alternatives.get(tool.name, ())})
            else:
                good = last_good
            if good < i:
                return self.result(True, f"Unrecovered span error at span {i + 1} of {len(spans)}: {err}")
        return self._clean(run)

    def _clean(self, run: Run) -> CheckResult:
        # an error said only in a result's text is invisible when results were not recorded
        gap = run.steps_not_captured(MISSING_TOOL_RESULT)
        return self.undecided(gap) if gap else self.result(False, "no unrecovered tool errors")


# What a framework's error says when its own limit ended the run (a step budget, the
# token limit), lowercase: read/conventions.rs's LIMIT_ERRORS, and Strands Agents'
# MaxTokensReachedException.
FRAMEWORK_LIMITS = ("llm calls limit", "max iterations", "recursion limit", "max turns", "max steps",
                    "maximum token limit")


def _limit_failure(s: SpanRecord) -> bool:
    """A span other than a tool's that failed with its framework's own limit: no tool failed."""
    return (s.tool is None and s.status_code == 2
            and (any(w in s.status_message.lower() for w in FRAMEWORK_LIMITS) or bool(_overflow(s.status_message))))


# ---------------------------------------------------------------- checks/context_overflow.py
CUTOFF_REASONS = frozenset({"length", "max_tokens", "max_output_tokens", "model_length",
                            "model_context_window_exceeded"})
OVERFLOW = re.compile(
    r"context[ _-]?length[ _-]?exceeded|maximum context length|context[ _-]?window[ _-]?(?:exceeded|overflow)"
    r"|exceeds?\s+the\s+(?:model'?s\s+)?(?:context|token)\s+(?:window|limit)|prompt is too long"
    r"|too many (?:input )?tokens|token limit (?:reached|exceeded)|max(?:imum)?[ _-]?tokens? (?:limit )?(?:reached|exceeded)"
    r"|exceeds?\s+the\s+maximum\s+number\s+of\s+tokens|input is too long for (?:the )?requested model",
    re.I,
)
# Every phrase above contains one of these words: a cheap test that skips the regex on
# the common span with no error text at all.
_PREFILTER = ("context", "token", "too long")


def _overflow(text: str) -> str:
    if not text:
        return ""
    low = text.lower()
    for w in _PREFILTER:
        if w in low:
            break
    else:
        return ""
    m = OVERFLOW.search(text)
    return m.group(0) if m else ""


def _span_signal(s: SpanRecord) -> str:
    # Asked of every span twice (as it arrives, and again over the run): the tests skip
    # what is empty, which is nearly everything, without a call.
    if s.finish_reasons:
        cut = next((r for r in s.finish_reasons if r.lower() in CUTOFF_REASONS), None)
        if cut:
            return f"stopped on finish reason {cut!r}: output cut at the token limit"
    if s.status_message:
        found = _overflow(s.status_message)
        if found:
            return f"status: {found!r}"
    error_type = s.error_type
    if error_type:
        found = _overflow(error_type)
        if found:
            return f"error.type: {found!r}"
    return ""


class ContextOverflow(Check):
    name = "context_overflow"
    description = "The run hit the context window or output token limit (finish reason or provider error)."

    def observe(self, state: Any, span: SpanRecord) -> str | None:
        signal = _span_signal(span)
        return f"span {span.span_id} ({span.name}) {signal}" if signal else None

    def finish(self, state: Any, run: Run) -> CheckResult:
        for i, s in enumerate(run.spans, start=1):
            signal = _span_signal(s)
            if signal:
                return self.result(True, f"span {i} ({s.name}) {signal}")
        overflows: dict[str, str] = {}  # a run repeats its results: each is read once
        for i, st in enumerate(run.steps):
            # The cheap text test first: whether the result is an error is asked only of the
            # few results that name a limit.
            found = overflows.get(st.result)
            if found is None:
                found = overflows[st.result] = _overflow(st.result)
            # only results that are errors: a search hit quoting the error text is not an overflow
            if found and (st.result.lstrip().startswith("Error") or step_errors(run)[i]):
                return self.result(True, f"step {st.index} ({st.tool}) result: {found!r}")
        found = _overflow(run.termination)
        if found:
            return self.result(True, f"run terminated: {found!r}")
        if run.missing & MISSING_FINISH:
            n = sum(1 for s in run.spans if s.missing & MISSING_FINISH)
            return self.undecided(f"finish reasons not recorded on {n} model span(s)")
        return self.result(False, "no context overflow or token cutoff")


# ------------------------------------------- checks/policy/check.py, without a policy file
class DenyOnlyPolicy(Check):
    """``PolicyCheck`` with the default deny patterns alone, as it was: its memo, its
    reasons, its verdict (the patterns' engine, ``DenyPatterns``, is the package's)."""

    name = "policy"
    description = "policy"

    def __init__(self) -> None:
        from faultgate_stream.checks.policy.deny_patterns import DenyPatterns

        self.deny = DenyPatterns()

    def start(self) -> dict[str, str | None]:
        return {}

    def _first_match(self, seen: dict[str, str | None], arguments: str) -> str | None:
        if arguments in seen:
            return seen[arguments]
        pattern = seen[arguments] = self.deny.first_match(arguments)
        return pattern

    def observe(self, state: dict[str, str | None], span: SpanRecord) -> str | None:
        if span.tool is not None:
            pattern = self._first_match(state, span.tool.arguments)
            if pattern:
                return f"span {span.span_id}: argument matches denied pattern {pattern!r}"
        for c in span.calls:
            pattern = self._first_match(state, c.arguments)
            if pattern:
                return f"span {span.span_id}: argument matches denied pattern {pattern!r}"
        return None

    def finish(self, state: dict[str, str | None] | None, run: Run) -> CheckResult:
        memo = state if state is not None else {}
        steps = run.steps
        bad = []
        for st in steps:
            pattern = self._first_match(memo, st.arguments)
            if pattern:
                bad.append(f"step {st.index}: argument matches denied pattern {pattern!r}")
        if bad:
            return self.result(True, "; ".join(bad))
        gap = run.steps_not_captured(MISSING_TOOL_ARGUMENTS)
        if gap:
            return self.undecided(gap)
        return self.result(False, f"{len(steps)} calls within policy")
