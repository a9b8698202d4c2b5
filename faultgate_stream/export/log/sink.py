"""One JSON line per verdict (structlog), every reason, scenario key and agent name masked:
an agent names itself, so its name is text from outside like any other."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from faultgate_stream.model.session import SessionVerdict
from faultgate_stream.model.verdict import EarlyFinding, RunVerdict
from faultgate_stream.verdict.redact import safe_key


class VerdictLog:
    """A ``VerdictConsumer`` writing to a structlog logger."""

    def __init__(self, logger: Any, redact: Callable[[str], str] | None) -> None:
        self.log = logger
        self.redact = redact or (lambda s: s)
        self._redactor = redact

    def early(self, finding: EarlyFinding) -> None:
        self.log.info("early_finding", trace_id=finding.trace_id, span_id=finding.span_id, check=finding.check,
                      agent=self.redact(finding.agent), reason=self.redact(finding.reason))

    def verdict(self, v: RunVerdict) -> None:
        # an amendment is the same line again, with what it amends
        amended = {} if not v.revision else {"revision": v.revision, "previous": v.previous,
                                             "amended_checks": list(v.amended_checks), "amended_by": v.amended_by}
        self.log.info(
            "verdict", run_id=str(v.key), trace_id=v.key.trace_id, root_span_id=v.root_span_id,
            scenario=safe_key(v.scenario, self._redactor), agent=self.redact(v.agent),
            agent_version=self.redact(v.agent_version), verdict=v.verdict,
            undecided={r.check: self.redact(r.reason) for r in v.undecided}, completion=v.completion.value,
            steps=v.steps, spans=v.spans,
            fired={r.check: {"severity": r.severity.value, "reason": self.redact(r.reason)} for r in v.fired},
            early=[f.check for f in v.early], **amended,
        )

    def session(self, s: SessionVerdict) -> None:
        self.log.info(
            "session_verdict", session_id=self.redact(s.session_id), agent=self.redact(s.agent), verdict=s.verdict,
            end=s.end.value, runs=[str(k) for k in s.runs], tokens=s.tokens, cost_usd=s.cost_usd,
            undecided={r.check: self.redact(r.reason) for r in s.results if r.undecided},
            fired={r.check: {"severity": r.severity.value, "reason": self.redact(r.reason)} for r in s.fired},
        )
