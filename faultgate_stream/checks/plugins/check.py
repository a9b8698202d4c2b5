"""A plug-in as the engine runs it: a ``checks.base.Check`` whose work is done elsewhere.

The evaluator drives every check through one contract on the threads that take spans in
(the assembler's lock held). A plug-in is code the service does not control, so its calls
never happen there: ``finish`` returns a result that stands in for the plug-in's answer,
and the isolation stage (``isolate.py``) gets the answer on its own thread and puts it in
the verdict before anyone hears of it; ``observe`` hands the spans to the same thread.

Two ways to stand in for the answer: where every run's checks are judged in one loop (no
bindings, the usual case) ``finish`` gives a constant result of the check's own (``stand_in``)
and the evaluator tells the stage which places hold it and which state and run they are for,
worked out once per ruleset: nothing is built a run. Where a check is judged on an agent's
view (bindings, shadow), ``pending`` gives a placeholder that carries them (``Pending``).
"""
from __future__ import annotations

import hashlib
from typing import Any, ClassVar, NamedTuple

from faultgate_stream.checks import api
from faultgate_stream.checks.base import Check
from faultgate_stream.checks.plugins.adapt import KIND, Views, check_result
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.model.run import Run
from faultgate_stream.model.verdict import CheckResult, Severity


class Origin(NamedTuple):
    """Where a plug-in came from, for ``faultgate-stream checks`` and evaluation records."""

    source: str        # "entry point NAME", "module:Class"
    package: str       # the distribution that ships it ("" when none is installed)
    package_version: str
    target: str        # module:Class

    @property
    def evaluator(self) -> str:
        """"package version", or the class path when no installed package ships it."""
        return f"{self.package} {self.package_version}" if self.package else self.target


class Pending(str):
    """The reason of a placeholder result: empty text that carries what the isolation stage
    needs to put the plug-in's real result in its place. A verdict that still holds one is
    never published (``Isolation.complete``), and were one to leak it reads undecided."""

    check: PluginCheck
    state: Any
    run: Run


class Guard:
    """A plug-in's record of overruns, shared by its runs; changed on the isolation thread only."""

    __slots__ = ("overruns", "off", "last")

    def __init__(self) -> None:
        self.overruns = 0   # in a row
        self.off = False
        self.last = ""      # what the last overrun was


class PluginState:
    """A trace's state for one plug-in: the plug-in's own (made on the isolation thread at
    first use), the CPU its calls took, and its early finding."""

    __slots__ = ("inner", "started", "cpu_ns", "early", "failed")

    def __init__(self) -> None:
        self.inner: Any = None
        self.started = False
        self.cpu_ns = 0
        self.early: tuple[str, str] | None = None  # (span id, reason)
        self.failed = ""  # why observing stopped: a raise, an overrun


class PluginCheck(Check):
    kind: ClassVar[str] = KIND
    isolated: ClassVar[bool] = True

    def __init__(self, plugin: api.Check, origin: Origin) -> None:
        self.plugin = plugin
        self.name = plugin.name  # type: ignore[misc]
        self.description = plugin.description or type(plugin).__doc__ or ""  # type: ignore[misc]
        sev = plugin.severity
        self.severity = sev if isinstance(sev, Severity) else Severity(sev)  # type: ignore[misc]
        self.attributes = frozenset(plugin.attributes) | api.STANDARD_ATTRIBUTES
        self.version = str(plugin.version)
        self.origin = origin
        # "name version": the package and its version, else the class path and the check's
        self.evaluator = origin.evaluator if origin.package else f"{origin.target} {self.version}"
        # what evaluation records give as the rules' digest: of the code's identity
        self.digest = hashlib.sha256(f"{origin.target}@{origin.package} {origin.package_version}"
                                     f"#{self.version}".encode()).hexdigest()[:16]
        # what it reads and whether its findings are evidence: the engine holds its results
        # to the run's unread work as it holds the built-ins' (isolate.py)
        self.reads = tuple(plugin.reads)  # type: ignore[misc]
        self.fires_on_evidence = bool(plugin.fires_on_evidence)  # type: ignore[misc]
        self.views = Views(plugin.attributes)
        self.guard = Guard()
        self.stage: Any = None  # the isolation stage that runs it (``Isolation.adopt``)
        # the plug-in's own start(), when it has one (called on the isolation thread)
        self.starts = type(plugin).start is not api.Check.start
        # what ``finish`` gives: read undecided, were it ever to leak, and the shape of the
        # check's undecided results (the isolation stage's ``_undecided``)
        self.stand_in = _new_tuple(CheckResult, (self.name, False, 0.0, "undecided: the plug-in has not answered",
                                                 self.severity, KIND, "", True, (), self.evaluator, ()))
        # what ``api.passed()`` (one result, shared) becomes: made once, not each run it is given
        self.passed_result = check_result(self.name, self.severity, KIND, api.passed(), self.evaluator)

    def finish(self, state: Any, run: Run) -> CheckResult:
        """In the evaluator's every-run loop: the stage knows which run and state this place
        is for (``Evaluator._placed``), so nothing is made a run."""
        return self.stand_in

    def pending(self, state: Any, run: Run) -> CheckResult:
        """On an agent's view (bindings, shadow): a placeholder that carries the run and state."""
        reason = Pending()
        reason.check, reason.state, reason.run = self, state, run
        # as the tuple it is, every field given (no NamedTuple ``__new__`` frame: one a run)
        return _new_tuple(CheckResult, (self.name, False, 0.0, reason, self.severity, KIND, "", True, (),
                                        self.evaluator, ()))


_new_tuple = tuple.__new__


class ObservingPluginCheck(PluginCheck):
    """A plug-in that defines ``observe``: the spans go to its thread as they arrive."""

    def start(self) -> Any:
        return PluginState()

    def observe(self, state: Any, span: SpanRecord) -> str | None:
        self.stage.observe(self, state, [span])
        return None

    def observe_spans(self, state: Any, spans: Any, lo: int, hi: int) -> tuple[int, str] | None:
        self.stage.observe(self, state, spans[lo:hi])
        return None


def plugin_check(plugin: api.Check, origin: Origin) -> PluginCheck:
    observes = type(plugin).observe is not api.Check.observe
    return (ObservingPluginCheck if observes else PluginCheck)(plugin, origin)
