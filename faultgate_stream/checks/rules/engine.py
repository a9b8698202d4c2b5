"""CEL, as the rules use it: expressions type-checked by cel-cpp when a file loads, and
evaluated by the ``cel`` crate in the compiled module.

Two implementations, each for what it does best (bench/README.md, "Rules without code").
cel-expr-python (the CEL project's own binding of cel-cpp) type-checks: a rule comparing a
string with a number is refused when its file loads, with its line and column; the crate
has no type checker. But evaluating with it from Python cost more than the rules: ~1 us a
span map of Python values turned into cel-cpp's, ~2 us of fixed cost a call, a Python loop
turn a span. The crate evaluates a program in ~0.25 us on a map built in Rust straight from
the span records (``_native.SpanRules``: every span of a batch in one call, no Python per
span), with one root context per file (its standard library costs ~33 us to build) and
each literal ``matches`` pattern compiled once (the crate's ``matches`` compiles on every
call, ~100 us). One evaluator runs: an expression cel-cpp accepts and the crate cannot
parse, or a literal pattern RE2 accepts and the ``regex`` crate does not, refuses the file
here, naming the rule and the cause (docs/writing-checks.md lists where the two differ).

Deliberately not common-expression-language (the crate's wheel): ~19 us a span to convert
a map from Python, ``matches`` compiling its regex on every call, and an import of 1.1 s.
Nor cel-python: ~2.4 ms for five rules on a span.
"""
from __future__ import annotations

import re
from typing import Any, NamedTuple

from faultgate_stream.model.errors import InputError

# A compile error as cel-cpp prints it: "ERROR: <input>:LINE:COL: CAUSE", then the source
# line and a caret under the column.
_ERROR = re.compile(r"ERROR: <input>:(\d+):(\d+): ([^\n]*)")
# ``x.matches("literal")``: literal patterns are compiled with RE2 at load, so a bad one is
# refused with the file (CEL would only say so on each evaluation).
_MATCHES = re.compile(r"""\.matches\(\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')\s*\)""")


# The member function literal ``matches`` patterns are run by: RE2's search, as matches().
_SEARCH = "_fg_re2_search"


def _cel() -> Any:
    from cel_expr_python import cel

    return cel


class Program(NamedTuple):
    """A rule's expression as it runs: ``source`` (literal ``matches`` patterns rewritten to
    ``_fg_re2_search``, compiled once) and those patterns, as the evaluator takes them."""

    source: str
    patterns: tuple[str, ...]


class Engine:
    """A CEL environment with ``span`` and ``run`` (maps of string to any), for checking
    expressions when a file loads; the evaluator (``_native.SpanRules``, ``RunRules``) runs
    them."""

    def __init__(self) -> None:
        cel = _cel()
        t = cel.Type
        self.env = cel.NewEnv(variables={"span": t.Map(t.STRING, t.DYN), "run": t.Map(t.STRING, t.DYN)})

    def compile(self, source: str, where: str) -> Program:
        """``source`` type-checked, and compiled for evaluating. Raises ``InputError``
        naming ``where`` (the rule), the line and column, and the cause."""
        try:
            program = self.env.compile(source)
        except Exception as e:  # cel-cpp says what is wrong in the message
            raise InputError(f"{where}: {_describe(str(e))}") from None
        kind = program.return_type().name()
        if kind not in ("BOOL", "DYN"):
            raise InputError(f"{where}: `when` must be true or false, and this expression is {kind.lower()}")
        patterns = []
        for m in _MATCHES.finditer(source):
            pattern = _unescape(m.group(1) if m.group(1) is not None else m.group(2))
            problem = _bad_regex(pattern)
            if problem:
                line, col = _position(source, m.start())
                raise InputError(f"{where}: line {line}, column {col}: matches(): {problem}")
            patterns.append(pattern)
        run = _MATCHES.sub(lambda m: m.group(0).replace(".matches(", f".{_SEARCH}(", 1), source)
        compiled = Program(run, tuple(patterns))
        from faultgate_stream._native import RunRules

        try:  # the evaluator's own compile: what it cannot run is refused here, not on each span
            RunRules([run], list(patterns))
        except ValueError as e:
            at, cause = e.args
            what = "its expression" if at == 0 else f"the pattern {patterns[at - 1]!r}"
            raise InputError(f"{where}: the evaluator cannot run {what}: {cause}") from None
        return compiled


def _describe(message: str) -> str:
    found = _ERROR.findall(message)
    if not found:
        return message.split("\n")[0]
    return "; ".join(f"line {line}, column {col}: {cause.strip()}" for line, col, cause in found)


def _position(source: str, at: int) -> tuple[int, int]:
    before = source[:at]
    return before.count("\n") + 1, at - (before.rfind("\n") + 1) + 1


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), "\\" + m.group(1)
                                                               if m.group(1) not in "\"'\\" else m.group(1)), text)


def _bad_regex(pattern: str) -> str:
    import re2

    try:
        re2.compile(pattern)
    except re2.error as e:
        return f"invalid RE2 pattern {pattern!r}: {e}"
    return ""
