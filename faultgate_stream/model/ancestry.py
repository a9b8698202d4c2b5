"""Each span's nearest agent ancestor (itself included), as spans arrive in any order.

Walking parent links from every span costs the depth of the tree per span: a 9,999-span
parent chain made that 50 million steps under the assembler's lock, and stalled every
client for seconds (issue 9, defect 12). Here every walk leaves its answer behind: a span
whose agent was found keeps it (parent links never change, so it stays right), and a
span whose chain still breaks at a parent not seen yet keeps where the chain broke, so
the next walk resumes there. Work over a whole run is then about linear in its spans;
``hops`` counts the steps taken, for tests that check exactly that.
"""
from __future__ import annotations

from typing import Any


class NearestAgent:
    def __init__(self) -> None:
        self._parent: dict[str, str | None] = {}
        self._agents: dict[str, Any] = {}   # agent span id -> what ``nearest`` answers for it
        self._found: dict[str, Any] = {}    # span id -> its nearest agent's answer
        self._resume: dict[str, str] = {}   # span id -> the top-most span its chain reached so far
        self.hops = 0

    def __len__(self) -> int:
        return len(self._parent)

    def add(self, span_id: str, parent_id: str | None, agent: Any = None) -> None:
        """A span arrived; ``agent`` is not None when it is an agent span."""
        self._parent[span_id] = parent_id
        if agent is not None:
            self._agents[span_id] = agent

    def nearest(self, span_id: str) -> Any:
        """The answer of the nearest known agent at or above ``span_id``, or None when the
        chain reaches a span not seen (or no parent) before any agent."""
        path: list[str] = []
        cur: str | None = span_id
        found = None
        budget = len(self._parent) + 1  # a parent loop (malformed input) ends the walk
        while cur is not None and budget > 0:
            budget -= 1
            self.hops += 1
            if cur in self._found:
                found = self._found[cur]
                break
            if cur not in self._parent:
                break
            if cur in self._agents:
                found = self._agents[cur]
                break
            path.append(cur)
            resume = self._resume.get(cur)
            cur = resume if resume is not None and resume != cur else self._parent[cur]
        if found is not None:
            for sid in path:
                self._found[sid] = found
                self._resume.pop(sid, None)
        elif path:
            top = path[-1]
            for sid in path:
                self._resume[sid] = top
        return found
