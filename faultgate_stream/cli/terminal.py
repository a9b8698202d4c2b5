"""What the commands print for a person at a terminal: run labels that tell rows apart,
text cut at a word, and standard output that ends quietly when its reader goes away.

No command's results depend on this module: it only shapes what is shown.
"""
from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterable
from typing import Any, TextIO

SHORT = 12  # faultgate's table shows a trace id's first 12 hex digits
# Once first 12 digits collide: at least 4 of the last digits, and at most 8; ids that
# need more differ in their middle, and a whole id is easier to search for than a long tail.
TAIL_MIN, TAIL_MAX = 4, 8
ELLIPSIS = "…"


def trace_labels(ids: Iterable[str]) -> dict[str, str]:
    """A label per trace id, as short as tells the ids apart. Ids whose first 12 digits
    are unique keep faultgate's label (those 12); a group of ids that share them (ids
    counted up from zero, ``000…0001``, ``000…0002``) shows the head and as much of the
    tail as differs, 12 characters where 4 to 7 tail digits suffice: ``0000000…0001``.
    Ids that the last 8 digits do not tell apart either are shown whole."""
    unique = list(dict.fromkeys(ids))
    heads = Counter(t[:SHORT] for t in unique)
    groups: dict[str, list[str]] = {}
    for t in unique:
        if heads[t[:SHORT]] > 1:
            groups.setdefault(t[:SHORT], []).append(t)
    labels = {t: t[:SHORT] for t in unique}
    for members in groups.values():
        tail = next((n for n in range(TAIL_MIN, TAIL_MAX + 1) if len({t[-n:] for t in members}) == len(members)), 0)
        head = max(SHORT - 1 - tail, TAIL_MIN)
        for t in members:
            labels[t] = f"{t[:head]}{ELLIPSIS}{t[-tail:]}" if tail and head + tail < len(t) else t
    return labels


def run_labels(keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """A label per run key ``(trace id, root span id)``: its trace's label (``trace_labels``),
    followed by ``/`` and the root span's first 8 digits where the trace holds several runs
    (the run id's own spelling, ``trace/span``, shortened)."""
    keys = list(dict.fromkeys(keys))
    traces = trace_labels(k[0] for k in keys)
    runs = Counter(k[0] for k in keys)
    spans = Counter((k[0], k[1][:8]) for k in keys)
    out: dict[tuple[str, str], str] = {}
    for trace_id, root in keys:
        label = traces[trace_id]
        if runs[trace_id] > 1:
            span = root[:8] if spans[(trace_id, root[:8])] == 1 else root
            label += f"/{span or 'orphan'}"
        out[(trace_id, root)] = label
    return out


def clip(text: str, width: int) -> str:
    """``text`` on one line in at most ``width`` characters: whole when it fits, else cut at
    the last space before the limit, with an ellipsis. Text with no space there (a scenario
    key, ``gap-G4-incidental-substring``) is cut after its last ``-``, ``_``, ``/``, ``.`` or
    ``:``; one unbroken word longer than the width (an id) where the width ends."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    for breaks in (" ", "-_/.:"):
        at = max(cut.rfind(c) for c in breaks)
        if at > 0:
            cut = cut[:at]
            break
    return cut.rstrip(" ,;:-_/.") + ELLIPSIS


class QuietOnClosedPipe:
    """Standard output that ends quietly when its reader goes away (``check ... | head``):
    the first write that meets a closed pipe points the descriptor at /dev/null, so the
    command runs on to the end, writes the files it was asked for and exits with its own
    status, with no ``BrokenPipeError`` traceback, and no "Exception ignored" line when the
    interpreter flushes at exit. Wraps the stream; every other attribute is the stream's."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.closed_pipe = False

    def _divert(self) -> None:
        self.closed_pipe = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._divert()
            return self._stream.write(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._divert()
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_stdout() -> None:
    """Make ``sys.stdout`` end quietly on a closed pipe (``QuietOnClosedPipe``); once."""
    if not isinstance(sys.stdout, QuietOnClosedPipe) and sys.stdout is not None:
        try:
            sys.stdout.fileno()
        except (AttributeError, OSError, ValueError):
            return  # not a file (a test's captured stream): nothing can close under it
        sys.stdout = QuietOnClosedPipe(sys.stdout)
