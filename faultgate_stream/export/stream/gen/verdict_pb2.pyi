from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Completion(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COMPLETION_UNSPECIFIED: _ClassVar[Completion]
    COMPLETION_COMPLETE: _ClassVar[Completion]
    COMPLETION_GRACE: _ClassVar[Completion]
    COMPLETION_MAX_DURATION: _ClassVar[Completion]
    COMPLETION_ORPHAN: _ClassVar[Completion]
    COMPLETION_EVICTED: _ClassVar[Completion]
    COMPLETION_SHUTDOWN: _ClassVar[Completion]

class Severity(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SEVERITY_UNSPECIFIED: _ClassVar[Severity]
    SEVERITY_HARD: _ClassVar[Severity]
    SEVERITY_SOFT: _ClassVar[Severity]
    SEVERITY_WARN: _ClassVar[Severity]

class Outcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTCOME_UNSPECIFIED: _ClassVar[Outcome]
    OUTCOME_CLEAN: _ClassVar[Outcome]
    OUTCOME_FAILED: _ClassVar[Outcome]
    OUTCOME_UNDECIDED: _ClassVar[Outcome]

class SessionEnd(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SESSION_END_UNSPECIFIED: _ClassVar[SessionEnd]
    SESSION_END_ENDED: _ClassVar[SessionEnd]
    SESSION_END_IDLE: _ClassVar[SessionEnd]
    SESSION_END_MAX_RUNS: _ClassVar[SessionEnd]
    SESSION_END_EVICTED: _ClassVar[SessionEnd]
    SESSION_END_SHUTDOWN: _ClassVar[SessionEnd]
    SESSION_END_COMPLETE: _ClassVar[SessionEnd]
COMPLETION_UNSPECIFIED: Completion
COMPLETION_COMPLETE: Completion
COMPLETION_GRACE: Completion
COMPLETION_MAX_DURATION: Completion
COMPLETION_ORPHAN: Completion
COMPLETION_EVICTED: Completion
COMPLETION_SHUTDOWN: Completion
SEVERITY_UNSPECIFIED: Severity
SEVERITY_HARD: Severity
SEVERITY_SOFT: Severity
SEVERITY_WARN: Severity
OUTCOME_UNSPECIFIED: Outcome
OUTCOME_CLEAN: Outcome
OUTCOME_FAILED: Outcome
OUTCOME_UNDECIDED: Outcome
SESSION_END_UNSPECIFIED: SessionEnd
SESSION_END_ENDED: SessionEnd
SESSION_END_IDLE: SessionEnd
SESSION_END_MAX_RUNS: SessionEnd
SESSION_END_EVICTED: SessionEnd
SESSION_END_SHUTDOWN: SessionEnd
SESSION_END_COMPLETE: SessionEnd

class CheckResult(_message.Message):
    __slots__ = ("check", "fired", "confidence", "severity", "reason", "kind", "undecided", "evaluator", "span_ids")
    CHECK_FIELD_NUMBER: _ClassVar[int]
    FIRED_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    SEVERITY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    UNDECIDED_FIELD_NUMBER: _ClassVar[int]
    EVALUATOR_FIELD_NUMBER: _ClassVar[int]
    SPAN_IDS_FIELD_NUMBER: _ClassVar[int]
    check: str
    fired: bool
    confidence: float
    severity: Severity
    reason: str
    kind: str
    undecided: bool
    evaluator: str
    span_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, check: _Optional[str] = ..., fired: _Optional[bool] = ..., confidence: _Optional[float] = ..., severity: _Optional[_Union[Severity, str]] = ..., reason: _Optional[str] = ..., kind: _Optional[str] = ..., undecided: _Optional[bool] = ..., evaluator: _Optional[str] = ..., span_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class EarlyFinding(_message.Message):
    __slots__ = ("check", "span_id", "reason")
    CHECK_FIELD_NUMBER: _ClassVar[int]
    SPAN_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    check: str
    span_id: str
    reason: str
    def __init__(self, check: _Optional[str] = ..., span_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class Verdict(_message.Message):
    __slots__ = ("run_id", "trace_id", "root_span_id", "scenario", "agent", "agent_version", "verdict", "completion", "steps", "spans", "results", "early", "decided_time_unix_nano", "revision", "previous_verdict", "amended_checks", "amended_by", "session")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    ROOT_SPAN_ID_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    AGENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    SPANS_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    EARLY_FIELD_NUMBER: _ClassVar[int]
    DECIDED_TIME_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_VERDICT_FIELD_NUMBER: _ClassVar[int]
    AMENDED_CHECKS_FIELD_NUMBER: _ClassVar[int]
    AMENDED_BY_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    trace_id: str
    root_span_id: str
    scenario: str
    agent: str
    agent_version: str
    verdict: Outcome
    completion: Completion
    steps: int
    spans: int
    results: _containers.RepeatedCompositeFieldContainer[CheckResult]
    early: _containers.RepeatedCompositeFieldContainer[EarlyFinding]
    decided_time_unix_nano: int
    revision: int
    previous_verdict: Outcome
    amended_checks: _containers.RepeatedScalarFieldContainer[str]
    amended_by: str
    session: SessionVerdict
    def __init__(self, run_id: _Optional[str] = ..., trace_id: _Optional[str] = ..., root_span_id: _Optional[str] = ..., scenario: _Optional[str] = ..., agent: _Optional[str] = ..., agent_version: _Optional[str] = ..., verdict: _Optional[_Union[Outcome, str]] = ..., completion: _Optional[_Union[Completion, str]] = ..., steps: _Optional[int] = ..., spans: _Optional[int] = ..., results: _Optional[_Iterable[_Union[CheckResult, _Mapping]]] = ..., early: _Optional[_Iterable[_Union[EarlyFinding, _Mapping]]] = ..., decided_time_unix_nano: _Optional[int] = ..., revision: _Optional[int] = ..., previous_verdict: _Optional[_Union[Outcome, str]] = ..., amended_checks: _Optional[_Iterable[str]] = ..., amended_by: _Optional[str] = ..., session: _Optional[_Union[SessionVerdict, _Mapping]] = ...) -> None: ...

class SessionVerdict(_message.Message):
    __slots__ = ("session_id", "agent", "verdict", "end", "run_ids", "results", "tokens", "has_tokens", "cost_usd", "has_cost", "decided_time_unix_nano")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    RUN_IDS_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    HAS_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COST_USD_FIELD_NUMBER: _ClassVar[int]
    HAS_COST_FIELD_NUMBER: _ClassVar[int]
    DECIDED_TIME_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    agent: str
    verdict: Outcome
    end: SessionEnd
    run_ids: _containers.RepeatedScalarFieldContainer[str]
    results: _containers.RepeatedCompositeFieldContainer[CheckResult]
    tokens: float
    has_tokens: bool
    cost_usd: float
    has_cost: bool
    decided_time_unix_nano: int
    def __init__(self, session_id: _Optional[str] = ..., agent: _Optional[str] = ..., verdict: _Optional[_Union[Outcome, str]] = ..., end: _Optional[_Union[SessionEnd, str]] = ..., run_ids: _Optional[_Iterable[str]] = ..., results: _Optional[_Iterable[_Union[CheckResult, _Mapping]]] = ..., tokens: _Optional[float] = ..., has_tokens: _Optional[bool] = ..., cost_usd: _Optional[float] = ..., has_cost: _Optional[bool] = ..., decided_time_unix_nano: _Optional[int] = ...) -> None: ...

class SubscribeRequest(_message.Message):
    __slots__ = ("agents", "only_failed", "sessions")
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    ONLY_FAILED_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    agents: _containers.RepeatedScalarFieldContainer[str]
    only_failed: bool
    sessions: bool
    def __init__(self, agents: _Optional[_Iterable[str]] = ..., only_failed: _Optional[bool] = ..., sessions: _Optional[bool] = ...) -> None: ...
