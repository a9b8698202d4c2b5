"""trajectory: luckrate 0.3.0's trajectory constraints as checks, one module per key.

A spec (``spec.Spec``, loaded by ``load_spec`` from JSON or YAML) says what a run must,
must not and may do; ``checks_for`` builds one check per constraint the spec sets, in this
fixed order, luckrate's:

==========================  ========  ===================================================
check                       severity  spec key
==========================  ========  ===================================================
``trajectory.tools``        hard      ``tools`` (fires early, from the calling span)
``trajectory.required``     hard      ``required``
``trajectory.forbidden``    hard      ``forbidden`` (fires early, from the calling span)
``trajectory.before``       hard      ``before``
``trajectory.max_steps``    soft      ``max_steps``
``trajectory.no_repeat``    soft      ``no_repeat: true``
``trajectory.ground``       warn      ``ground`` (on unless ``false``)
``trajectory.taint``        hard      ``untrusted`` and ``privileged``
``trajectory.secrets``      warn      ``secrets`` (on unless ``false``)
==========================  ========  ===================================================

A key the spec leaves out builds no check: nothing to check is not the same as a pass.
Severity is each check's own (hard fails a build on one run, soft is a budget a gate
fails on a majority of runs, warn never fails a build); it is not configurable, because
luckrate's keys carry their severities with them.
"""
from __future__ import annotations

from faultgate_stream.checks.base import Check
from faultgate_stream.checks.trajectory.before import Before
from faultgate_stream.checks.trajectory.forbidden import Forbidden
from faultgate_stream.checks.trajectory.ground import Ground
from faultgate_stream.checks.trajectory.max_steps import MaxSteps
from faultgate_stream.checks.trajectory.no_repeat import NoRepeat
from faultgate_stream.checks.trajectory.required import Required
from faultgate_stream.checks.trajectory.secrets import Secrets
from faultgate_stream.checks.trajectory.spec import Spec, SpecError, load_spec
from faultgate_stream.checks.trajectory.taint import Taint
from faultgate_stream.checks.trajectory.tools import Tools

__all__ = ["CHECKS", "Spec", "SpecError", "checks_for", "load_spec"]

# Every trajectory check class, in ``checks_for``'s order.
CHECKS: tuple[type[Check], ...] = (Tools, Required, Forbidden, Before, MaxSteps, NoRepeat, Ground, Taint, Secrets)


def checks_for(spec: Spec) -> list[Check]:
    """The checks a spec asks for, in ``CHECKS`` order; only the constraints it sets."""
    out: list[Check] = []
    if spec.tools:
        out.append(Tools(spec.tools))
    if spec.required:
        out.append(Required(spec.required))
    if spec.forbidden:
        out.append(Forbidden(spec.forbidden))
    if spec.before:
        out.append(Before(spec.before))
    if spec.max_steps is not None:
        out.append(MaxSteps(spec.max_steps))
    if spec.no_repeat:
        out.append(NoRepeat())
    if spec.ground:
        out.append(Ground())
    if spec.untrusted and spec.privileged:
        out.append(Taint(spec.untrusted, spec.privileged))
    if spec.secrets:
        out.append(Secrets())
    return out
