"""Reasons that quote a value cut short for reading, keeping the whole value for masking.

A check writes "Tool 'x' with arguments {first 60 characters} ..." as faultgate does. If
the cut came first and the mask after, the mask would see half a secret (a JWT without
its signature, 13 digits of a card, an email without its domain) and let it through. So a
``Reason`` is the cut text (what it equals and prints as, so checks and tests read it as
before) and also its parts, each quoted value whole: the redactor masks the whole value,
then cuts (``verdict/redact.py``).
"""
from __future__ import annotations

from typing import NamedTuple

# Marks around a quoted value while the redactor masks the whole text; taken out of values.
OPEN, CLOSE = "\ue000", "\ue001"


# Not a dataclass: ``check`` runs without importing ``dataclasses`` (tests/cli/test_startup.py).
class Quote(NamedTuple):
    value: str
    limit: int

    @property
    def cut(self) -> str:
        return self.value[:self.limit]


class Reason(str):
    """A ``str`` (the cut text) that also carries its parts."""

    parts: tuple[str | Quote, ...]

    def __new__(cls, parts: tuple[str | Quote, ...]) -> Reason:
        obj = super().__new__(cls, "".join(p.cut if isinstance(p, Quote) else p for p in parts))
        obj.parts = parts
        return obj

    def marked(self) -> str:
        """The whole text, each quoted value whole and between ``OPEN`` and ``CLOSE``."""
        return "".join(f"{OPEN}{_unmarked(p.value)}{CLOSE}" if isinstance(p, Quote) else _unmarked(p)
                       for p in self.parts)

    @property
    def limits(self) -> tuple[int, ...]:
        return tuple(p.limit for p in self.parts if isinstance(p, Quote))


def _unmarked(text: str) -> str:
    return text.replace(OPEN, "").replace(CLOSE, "") if OPEN in text or CLOSE in text else text


def quoted(value: str, limit: int) -> Quote:
    """``value`` to be shown cut to ``limit`` characters, masked whole before the cut."""
    return Quote(value, limit)


def reason(*parts: object) -> str:
    """A reason made of text, ``quoted`` values and other reasons; a plain ``str`` when
    nothing in it is quoted."""
    flat: list[str | Quote] = []
    for p in parts:
        if isinstance(p, Reason):
            flat.extend(p.parts)
        elif isinstance(p, Quote):
            flat.append(p)
        else:
            flat.append(str(p))
    if not any(isinstance(p, Quote) for p in flat):
        return "".join(flat)  # type: ignore[arg-type]
    return Reason(tuple(flat))


def joined(separator: str, items: list[str]) -> str:
    """``separator.join(items)``, keeping what is quoted in them."""
    parts: list[object] = []
    for i, item in enumerate(items):
        if i:
            parts.append(separator)
        parts.append(item)
    return reason(*parts)
