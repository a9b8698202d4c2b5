"""Which span attributes a reader turns into Python values: the ones a record is built
from (``conventions.READ_NAMES``) and the ones read from records afterwards (``kept``: what
the service's checks, the run's facts and the verdict read).

A span carries attributes nothing here reads: model and provider names, request and
response ids, temperatures, token limits. Held until its run's verdict, they were most of
a record's attribute memory (bench/held_memory.py). The compiled reader skips every
attribute a projection does not name, and a record keeps only ``kept``. Without a
projection (the offline command, tests) a reader keeps every attribute but content.
"""
from __future__ import annotations

from collections.abc import Iterable

from faultgate_stream import _native


class Projection:
    __slots__ = ("kept", "wire")

    def __init__(self, kept: Iterable[str]) -> None:
        self.kept = frozenset(kept)
        # the compiled reader reads these and what the conventions build records from
        self.wire = _native.Projection(sorted(self.kept))

    def widened(self, kept: Iterable[str]) -> Projection:
        """This projection and ``kept`` too. A reload never narrows what is read: a run in
        flight is decided by the checks it started with, which may read what the new ones
        do not."""
        return Projection(self.kept | frozenset(kept))
