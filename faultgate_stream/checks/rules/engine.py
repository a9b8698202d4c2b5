"""CEL, as the rules use it: one environment, expressions type-checked when a file loads,
and every rule of a level evaluated in one call over a stretch of spans or a run.

The implementation is cel-expr-python (the CEL project's own binding of cel-cpp), chosen
by measurement (bench/README.md, "Rules without code"): it type-checks at compile time, so
a rule comparing a string with a number is refused when its file loads, with its position;
``matches`` is RE2; it imports in under a millisecond and depends on nothing. What it costs
is Python values turned into CEL values (~1 us a span map of two strings, ~1 us more for a
nested map of three) and ~2 us of fixed cost per evaluation, against ~0.15 us per rule per
span of evaluating. Hence the shape here: only the fields some rule names are put in a span's
map, spans a rule's ``tools`` rule out are left out, and all the rules of a level are one
program (``spans.exists(span, r1 || r2 ...)``), evaluated once per stretch of spans; only
when it is true or an error is each rule asked alone, to say which fired where.

Deliberately not common-expression-language (the cel-interpreter crate's wheel): 0.5 us an
evaluation, but ~2 us to build a context and ~19 us a span to convert a map, ``matches``
compiling its regex on every call (~190 us), no type checker, and an import of 1.1 s (it
loads a command-line UI). Nor cel-python: ~2.4 ms for five rules on a span.
"""
from __future__ import annotations

import re
from typing import Any

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


class Engine:
    """A CEL environment with ``span`` and ``run`` (maps of string to any) and ``spans``
    (a list of span maps, for a level's combined program)."""

    def __init__(self) -> None:
        cel = _cel()
        t = cel.Type
        span = t.Map(t.STRING, t.DYN)
        self._cel = cel
        self._error = t.ERROR
        self._patterns: dict[str, Any] = {}
        variables = {"span": span, "run": t.Map(t.STRING, t.DYN), "spans": t.List(span)}
        # cel-cpp's matches() compiles its pattern on every call (~15 us): a literal pattern
        # is run by the same engine, RE2, compiled once (~3 us a call, most of it the call)
        self.env = cel.NewEnv(variables=variables, functions=[cel.FunctionDecl(_SEARCH, [cel.Overload(
            f"{_SEARCH}_string_string", return_type=t.BOOL, parameters=[t.STRING, t.STRING], is_member=True,
            impl=self._search)])])

    def _search(self, text: str, pattern: str) -> bool:
        r = self._patterns.get(pattern)
        if r is None:
            import re2

            r = self._patterns[pattern] = re2.compile(pattern)
        return r.search(text) is not None

    def compile(self, source: str, where: str, boolean: bool = True) -> Any:
        """``source`` compiled and type-checked. Raises ``InputError`` naming ``where`` (the
        rule), the line and column, and the cause."""
        try:
            program = self.env.compile(source)
        except Exception as e:  # cel-cpp says what is wrong in the message
            raise InputError(f"{where}: {_describe(str(e))}") from None
        kind = program.return_type().name()
        if boolean and kind not in ("BOOL", "DYN"):
            raise InputError(f"{where}: `when` must be true or false, and this expression is {kind.lower()}")
        found = list(_MATCHES.finditer(source))
        for m in found:
            pattern = m.group(1) if m.group(1) is not None else m.group(2)
            problem = _bad_regex(_unescape(pattern))
            if problem:
                line, col = _position(source, m.start())
                raise InputError(f"{where}: line {line}, column {col}: matches(): {problem}")
        if found:  # checked as written; run with each literal pattern compiled once
            return self.env.compile(_MATCHES.sub(lambda m: m.group(0).replace(".matches(", f".{_SEARCH}(", 1),
                                                   source))
        return program

    def activation(self, data: dict[str, Any]) -> Any:
        """``data`` bound once for several programs: its values are turned into CEL values
        on first use and kept (that turning is most of an evaluation's cost)."""
        return self.env.Activation(data)

    def values(self, program: Any, activation: Any) -> Any:
        """What ``program`` gives on ``activation``; None when it is an error."""
        try:
            v = program.eval(activation)
        except Exception:
            return None
        return None if v.type() == self._error else v.plain_value()

    def evaluate(self, program: Any, data: Any) -> tuple[bool, str]:
        """(whether it was true, "") or (False, the error) for one program on ``data`` (a
        mapping, or an ``activation``)."""
        try:
            v = program.eval(data=data) if isinstance(data, dict) else program.eval(data)
        except Exception as e:
            return False, _short(str(e))
        if v.type() == self._error:
            return False, _short(str(v.value()))
        value = v.value()
        if value is True:
            return True, ""
        if value is False:
            return False, ""
        return False, f"the expression gave {type(value).__name__} {value!r}, not true or false"


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


def _short(text: str) -> str:
    text = text.strip().split("\n")[0]
    for prefix in ("INVALID_ARGUMENT: ", "NOT_FOUND: "):
        if text.startswith(prefix):
            text = text[len(prefix):]
    return text if len(text) <= 200 else text[:200] + "..."
