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

from dataclasses import dataclass, field
from typing import Any

import re2

# faultgate's defaults: path traversal, file URLs, credential files, procfs.
DEFAULT_DENY_PATTERNS = (r"\.\./", r"file://", r"/etc/(passwd|shadow)", r"~/\.ssh", r"/proc/")
# Each default spells out a "/" outside any alternative, class or repetition, so it matches
# only text that holds one. Arguments without one (most search queries) are cleared by a
# substring test of 0.03 us, not five searches of 0.7-1.0 us together.
DEFAULTS_NEED = "/"


# Case-insensitive, as faultgate compiles them (re.I); errors come back as exceptions, not
# as lines on stderr.
_OPTIONS = re2.Options()
_OPTIONS.case_sensitive = False
_OPTIONS.log_errors = False


def compile_pattern(pattern: str) -> Any:
    """The pattern on RE2. Raises ``ValueError`` saying why RE2 cannot run it."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as e:
        reason = e.args[0].decode("utf-8", "replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        raise ValueError(f"cannot run in linear time on RE2 ({reason}); backreferences and lookaround "
                         "are not supported") from None


@dataclass(frozen=True)
class DenyPatterns:
    patterns: tuple[str, ...] = DEFAULT_DENY_PATTERNS
    _compiled: tuple[tuple[str, Any], ...] = field(init=False, repr=False, compare=False)
    _needs: str = field(init=False, repr=False, compare=False)  # text every pattern needs; "" unknown

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", tuple((p, compile_pattern(p)) for p in self.patterns))
        object.__setattr__(self, "_needs", DEFAULTS_NEED if self.patterns == DEFAULT_DENY_PATTERNS else "")

    def first_match(self, arguments: str) -> str | None:
        """The first denied pattern the arguments match, as written in the policy."""
        if self._needs and self._needs not in arguments:
            return None
        for pattern, rx in self._compiled:
            if rx.search(arguments):
                return pattern
        return None

    @property
    def engines(self) -> tuple[type, ...]:
        """The type each pattern runs on (RE2's), for the tests that pin it."""
        return tuple(type(rx) for _, rx in self._compiled)
