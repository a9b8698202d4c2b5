"""Recent verdicts by run, so a late root span carries the verdict its run already got.

Each verdict is kept as nested plain tuples (``_pack``) and made a ``RunVerdict`` again
when a late span asks for it: the collector stops tracking a tuple of strings, numbers and
such tuples, never a dataclass (nor an enum member). Ten thousand cached verdicts as
objects were ~110,000 tracked objects, most of what every full collection walked in a
long-running service (issue 12).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from itertools import chain

from faultgate_stream.model.records import RunKey
from faultgate_stream.model.verdict import CheckResult, Completion, EarlyFinding, RunVerdict, Severity

_RESULT = CheckResult._fields
_EARLY = EarlyFinding._fields
_VERDICT = RunVerdict._fields
_SEVERITY = _RESULT.index("severity")
# what becomes a plain value in a packed verdict, by field position
(_KEY, _COMPLETION, _RESULTS, _RELEASED, _EARLY_AT, _MEASURES, _SHADOW) = (
    _VERDICT.index(n) for n in ("key", "completion", "results", "released_span_ids", "early", "measures", "shadow"))


def _flat(items: Iterable[tuple]) -> tuple:
    return tuple(chain.from_iterable(items))


def _rows(flat: tuple, width: int) -> Iterator[tuple]:
    return (flat[i:i + width] for i in range(0, len(flat), width))


def _pack_results(results: tuple[CheckResult, ...]) -> tuple:
    """The results' fields in a row, each severity as its value."""
    flat = list(chain.from_iterable(results))
    for i in range(_SEVERITY, len(flat), len(_RESULT)):
        flat[i] = flat[i]._value_  # the enum's documented attribute: ``.value`` is a Python call
    return tuple(flat)


def _unpack_result(t: tuple) -> CheckResult:
    return CheckResult(*t[:_SEVERITY], Severity(t[_SEVERITY]), *t[_SEVERITY + 1:])


def _pack(v: RunVerdict) -> tuple:
    """The verdict's fields, its nested ones flattened: results as one tuple of their
    fields in a row, early findings and measures likewise. Flat, because the collector
    untracks one level of nested tuples per pass it makes, and a pass may not come before
    the tuple has joined the oldest generation."""
    t = list(v)
    t[_KEY] = tuple(v.key)
    t[_COMPLETION] = v.completion.value
    t[_RESULTS] = _pack_results(v.results)
    t[_RELEASED] = tuple(v.released_span_ids)
    t[_EARLY_AT] = _flat(v.early)
    t[_MEASURES] = _flat(v.measures.items())
    t[_SHADOW] = _pack_results(v.shadow) if v.shadow else ()
    return tuple(t)


def _unpack(t: tuple) -> RunVerdict:
    d = list(t[:len(_VERDICT)])
    d[_KEY] = RunKey(*t[_KEY])
    d[_COMPLETION] = Completion(t[_COMPLETION])
    d[_RESULTS] = tuple(map(_unpack_result, _rows(t[_RESULTS], len(_RESULT))))
    d[_RELEASED] = frozenset(t[_RELEASED])
    d[_EARLY_AT] = tuple(EarlyFinding(*e) for e in _rows(t[_EARLY_AT], len(_EARLY)))
    d[_MEASURES] = dict(_rows(t[_MEASURES], 2))
    d[_SHADOW] = tuple(map(_unpack_result, _rows(t[_SHADOW], len(_RESULT))))
    return RunVerdict(*d)


# Late roots come seconds after their verdict (a max-duration close, a slow exporter); a
# few thousand recent runs cover that window at any rate this process can check.
DEFAULT_VERDICT_CACHE = 10_000


class VerdictCache:
    """Also keeps each run's root resource (its encoding): an amended verdict's evaluation
    records go out long after the root left, and name the same resource as the first ones."""

    def __init__(self, size: int = DEFAULT_VERDICT_CACHE) -> None:
        self.size = size
        # run key (as a plain tuple) -> the ``_pack``ed verdict, its root's resource last
        self._items: OrderedDict[tuple[str, str], tuple] = OrderedDict()
        self._lock = threading.Lock()
        self.evictions = 0

    def put(self, v: RunVerdict, resource: bytes | None = None) -> None:
        """Keep ``v``, with its root's ``resource`` (None: the one kept before, if any)."""
        packed, key = _pack(v), tuple(v.key)  # a plain tuple key: equal to the RunKey, and untracked
        with self._lock:
            if resource is None:
                old = self._items.get(key)
                resource = old[-1] if old else b""
            self._items[key] = packed + (resource,)
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
                self.evictions += 1

    def get(self, key: RunKey) -> RunVerdict | None:
        with self._lock:
            item = self._items.get(key)
        return _unpack(item) if item else None

    def resource(self, key: RunKey) -> bytes:
        with self._lock:
            item = self._items.get(key)
            return item[-1] if item else b""
