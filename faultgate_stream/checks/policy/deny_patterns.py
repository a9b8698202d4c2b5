"""deny_patterns: tool arguments that must never appear, active without a policy file.

The defaults catch path traversal and local-file reads. A denied argument is final the
moment its call arrives, so it fires early.

Patterns come from operators and are searched in text agents write, under the
assembler's lock: Python's backtracking ``re`` took 8.8 s on a 26-byte argument against
``(a+)+$`` and stalled every client. So they run on RE2 (``google-re2``), whose search
time is linear in the text whatever the pattern; a pattern RE2 cannot run
(backreferences, lookaround) is refused when the policy loads, with the reason.
"""
from __future__ import annotations

from functools import cache
from typing import Any

# faultgate's defaults: path traversal, file URLs, credential files, procfs.
DEFAULT_DENY_PATTERNS = (r"\.\./", r"file://", r"/etc/(passwd|shadow)", r"~/\.ssh", r"/proc/")
# Each default spells out a "/" outside any alternative, class or repetition, so it matches
# only text that holds one. Arguments without one (most search queries) are cleared by a
# substring test of 0.03 us, not five searches of 0.7-1.0 us together.
DEFAULTS_NEED = "/"


@cache
def _re2() -> tuple[Any, Any]:
    """RE2 and its options, loaded when the first pattern is compiled: most arguments are
    cleared by ``DEFAULTS_NEED`` alone, and a command that never searches never loads it.
    Case-insensitive, as faultgate compiles them (re.I); errors come back as exceptions,
    not as lines on stderr."""
    import re2

    options = re2.Options()
    options.case_sensitive = False
    options.log_errors = False
    return re2, options


def compile_pattern(pattern: str) -> Any:
    """The pattern on RE2. Raises ``ValueError`` saying why RE2 cannot run it."""
    re2, options = _re2()
    try:
        return re2.compile(pattern, options)
    except re2.error as e:
        reason = e.args[0].decode("utf-8", "replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        raise ValueError(f"cannot run in linear time on RE2 ({reason}); backreferences and lookaround "
                         "are not supported") from None


class DenyPatterns:
    """A policy's denied patterns (faultgate's defaults without one). Not a dataclass:
    ``check`` runs without importing ``dataclasses`` (tests/cli/test_startup.py)."""

    __slots__ = ("patterns", "_compiled", "_needs")

    def __init__(self, patterns: tuple[str, ...] = DEFAULT_DENY_PATTERNS) -> None:
        self.patterns = patterns
        # The defaults are compiled on the first argument that needs a search (a policy's
        # own patterns were compiled when it loaded, to refuse those RE2 cannot run, and
        # are compiled here again); two threads racing to it compile the same tuple twice.
        if patterns != DEFAULT_DENY_PATTERNS:
            self._compiled = self._compile()
        self._needs = DEFAULTS_NEED if patterns == DEFAULT_DENY_PATTERNS else ""  # "": unknown

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DenyPatterns) and other.patterns == self.patterns

    def __hash__(self) -> int:
        return hash(self.patterns)

    def _compile(self) -> tuple[tuple[str, Any], ...]:
        return tuple((p, compile_pattern(p)) for p in self.patterns)

    def _patterns(self) -> tuple[tuple[str, Any], ...]:
        try:
            return self._compiled
        except AttributeError:
            compiled = self._compiled = self._compile()
            return compiled

    def first_match(self, arguments: str) -> str | None:
        """The first denied pattern the arguments match, as written in the policy."""
        if self._needs and self._needs not in arguments:
            return None
        for pattern, rx in self._patterns():
            if rx.search(arguments):
                return pattern
        return None

    @property
    def engines(self) -> tuple[type, ...]:
        """The type each pattern runs on (RE2's), for the tests that pin it."""
        return tuple(type(rx) for _, rx in self._patterns())
