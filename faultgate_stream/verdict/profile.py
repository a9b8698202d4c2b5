"""A run's profile (``model/profile.py``): its shape, session and task, worked out in
Python from the run's steps and span attributes when the verdict is made.

Deliberately not in the compiled core: these are a handful of reads of facts the run
already has (its steps, its step errors, its usage, its root's attributes), made only when
drift, sessions or judge routing are configured, and the core is being rewritten
elsewhere (issue 34). ``Profiler`` is built once from the settings and called per run.
"""
from __future__ import annotations

import hashlib
import math

from faultgate_stream.checks.policy.windows import SESSION_ATTRS
from faultgate_stream.checks.signals import step_errors
from faultgate_stream.model.profile import RunProfile, count_bucket, steps_bucket, tokens_bucket, tool_class
from faultgate_stream.model.run import Run

# The attribute that says a run ended its session (sessions.end_attribute's default): true,
# "true" or 1 on the run's root (else any span of it).
DEFAULT_END_ATTRIBUTE = "faultgate.session.end"


def task_of(prompt: str) -> str:
    """The same request asked twice gives the same task: the prompt folded (white space
    and case), hashed; "" when no prompt was captured (content off), which never matches."""
    folded = " ".join(prompt.split()).casefold()
    if not folded:
        return ""
    return hashlib.sha256(folded.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def shape_of(run: Run) -> tuple[str, ...]:
    steps = run.steps
    errors = step_errors(run)
    failed = [not st.ok or bool(errors[i]) for i, st in enumerate(steps)]
    retries = sum(1 for i in range(1, len(steps)) if failed[i - 1] and steps[i].tool == steps[i - 1].tool)
    return (tool_class([st.tool for st in steps]), steps_bucket(len(steps)), count_bucket(sum(failed)),
            count_bucket(retries), tokens_bucket(run.usage_tokens))


def _truthy(v: object) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return v != 0
    return str(v).strip().lower() in ("true", "1", "yes")


class Profiler:
    """``end_attribute``: the attribute that ends a session; ``monotonic``: attributes that
    must never go down within a session (their values are read from the run's root, else
    its first span that has one)."""

    def __init__(self, end_attribute: str = DEFAULT_END_ATTRIBUTE, monotonic: tuple[str, ...] = ()) -> None:
        self.end_attribute = end_attribute
        self.monotonic = monotonic
        self._wanted = (*SESSION_ATTRS, *monotonic)

    @property
    def attributes(self) -> frozenset[str]:
        """The span attributes it reads: the receivers' projection must keep them."""
        return frozenset((*SESSION_ATTRS, self.end_attribute, *self.monotonic))

    def __call__(self, run: Run) -> RunProfile:
        # one pass over the root then the spans in start order, keeping the first value of
        # each attribute read: session_of's answer (session.id before gen_ai.conversation.id,
        # each on the root before the spans) without a pass per attribute
        wanted = self._wanted
        first: dict[str, object] = {}
        end = False
        for sp in ((run.root,) if run.root is not None else ()) + run.spans:
            attrs = sp.attrs
            if not attrs:
                continue
            for name in wanted:
                if name in attrs and name not in first:
                    v = attrs[name]
                    if name in SESSION_ATTRS and not str(v).strip():
                        continue  # a blank id is no id: a later span may carry one
                    first[name] = v
            if not end and self.end_attribute in attrs and _truthy(attrs[self.end_attribute]):
                end = True
        session = next((str(first[n]).strip() for n in SESSION_ATTRS if n in first), "")
        attrs = tuple((name, float(v)) for name in self.monotonic if isinstance(v := first.get(name), (int, float))
                      and not isinstance(v, bool) and math.isfinite(v))
        return RunProfile(shape_of(run), session, end, task_of(run.prompt), bool(run.answer.strip()), attrs)
