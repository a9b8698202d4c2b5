"""OTLP logs (``ExportLogsServiceRequest``, or its JSON form ``{"resourceLogs": [...]}``) ->
the content records of GenAI log events (``log_events``).

As with spans, a record whose ids are malformed, whose body and attributes are past a
bound (read/bounds.py), or whose GenAI event has a body of the wrong shape is rejected
(partial success names the first); a record that is valid but carries no GenAI content,
or names no span, is passed over: it is accepted and counted, not an error.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.read import bounds, log_events, otlp_json
from faultgate_stream.read.ids import SPAN_ID_BYTES, TRACE_ID_BYTES, hex_id


@dataclass(frozen=True, slots=True)
class DecodedLogs:
    contents: list[SpanRecord]
    records: int         # log records read, content or not
    rejected: int
    first_problem: str   # "" when nothing was rejected
    # each rejected record's reason (a faultgate_receiver_rejected_log_records label)
    rejections: tuple[str, ...] = ()

    @property
    def passed_over(self) -> int:
        return self.records - self.rejected - len(self.contents)

    def reasons(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for reason in self.rejections:
            out[reason] = out.get(reason, 0) + 1
        if self.rejected > len(self.rejections):
            out["invalid_log_record"] = out.get("invalid_log_record", 0) + self.rejected - len(self.rejections)
        return out


class _Rejections:
    """A reader's tally of rejected records: how many, why each, the first named."""

    __slots__ = ("reasons", "first")

    def __init__(self) -> None:
        self.reasons: list[str] = []
        self.first = ""

    def add(self, where: str, problem: str, reason: str = "invalid_log_record") -> None:
        self.reasons.append(reason)
        self.first = self.first or f"{where}: {problem}"

    def decoded(self, contents: list[SpanRecord], records: int) -> DecodedLogs:
        return DecodedLogs(contents, records, len(self.reasons), self.first, tuple(self.reasons))


BAD_TRACE_ID = "traceId is not a 16-byte trace id"
BAD_SPAN_ID = "spanId is not an 8-byte span id"


def _ids(raw_trace: str, raw_span: str) -> tuple[str, str] | str | None:
    """(trace id, span id) of OTLP/JSON's hex; None when the record names no span; a
    problem when malformed."""
    if not raw_trace and not raw_span:
        return None
    tid = hex_id(raw_trace, TRACE_ID_BYTES) if raw_trace else None
    if tid is None:
        return BAD_TRACE_ID
    sid = hex_id(raw_span, SPAN_ID_BYTES) if raw_span else None
    if sid is None:
        return BAD_SPAN_ID
    return tid, sid


def _proto_ids(tid: str | None, sid: str | None) -> tuple[str, str] | str | None:
    """``_ids`` for the compiled reader's ids: hex, "" when absent, None when malformed."""
    if tid == "" and sid == "":
        return None
    if not tid:
        return BAD_TRACE_ID
    if not sid:
        return BAD_SPAN_ID
    return tid, sid


def read_json(doc: Any) -> DecodedLogs:
    """OTLP/JSON logs. Raises ``InputError`` when the document is not that shape at all."""
    if not isinstance(doc, dict) or not isinstance(doc.get("resourceLogs"), list):
        raise InputError("not OTLP/JSON logs: no resourceLogs list")
    contents: list[SpanRecord] = []
    n = 0
    rejected = _Rejections()
    for i, rl in enumerate(doc["resourceLogs"]):
        if not isinstance(rl, dict):
            raise InputError(f"resourceLogs[{i}]: expected an object")
        for j, sl in enumerate(rl.get("scopeLogs") or []):
            if not isinstance(sl, dict):
                raise InputError(f"resourceLogs[{i}].scopeLogs[{j}]: expected an object")
            for k, lr in enumerate(sl.get("logRecords") or []):
                where = f"resourceLogs[{i}].scopeLogs[{j}].logRecords[{k}]"
                if not isinstance(lr, dict):
                    raise InputError(f"{where}: expected an object")
                n += 1
                ids = _ids(str(lr.get("traceId") or ""), str(lr.get("spanId") or ""))
                if isinstance(ids, str):
                    rejected.add(where, ids)
                    continue
                raw = lr.get("attributes") or []
                over = bounds.json_problem([lr.get("body"), *(kv.get("value") for kv in raw if isinstance(kv, dict))]
                                           if isinstance(raw, list) else [lr.get("body")])
                if over:
                    rejected.add(where, over, "too_deep")
                    continue
                try:
                    attrs, body = _json_attributes(lr, where), otlp_json.value(lr.get("body"))
                except (TypeError, AttributeError, KeyError, ValueError) as e:
                    raise InputError(f"{where}: a malformed AnyValue ({type(e).__name__})") from None
                name = log_events.event_name(str(lr.get("eventName") or ""), attrs)
                try:
                    content = log_events.content_attributes(name, attrs, body)
                except InputError as e:  # a GenAI event's body of the wrong shape
                    rejected.add(where, str(e))
                    continue
                if ids is None or content is None:
                    continue
                try:
                    t = int(lr.get("timeUnixNano") or lr.get("observedTimeUnixNano") or 0)
                    if not 0 <= t < otlp_json.FIXED64:
                        raise ValueError
                except (TypeError, ValueError, OverflowError):
                    raise InputError(f"{where}.timeUnixNano: {lr.get('timeUnixNano')!r} is not a "
                                     "nanosecond time (an integer from 0 to 2^64-1)") from None
                contents.append(log_events.content_record(ids[0], ids[1], t, content))
    return rejected.decoded(contents, n)


def _json_attributes(lr: dict[str, Any], where: str) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    raw = lr.get("attributes") or []
    if not isinstance(raw, list):
        raise InputError(f"{where}.attributes: expected a list")
    for kv in raw:
        if not isinstance(kv, dict) or "key" not in kv:
            raise InputError(f"{where}.attributes: expected {{key, value}} objects")
        attrs[str(kv["key"])] = otlp_json.value(kv.get("value"))
    return attrs


def parse(data: bytes) -> Any:
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    try:
        return ExportLogsServiceRequest.FromString(data)
    except DecodeError as e:
        raise InputError(f"payload is not an ExportLogsServiceRequest: {e}") from None


def read_proto(data: bytes) -> DecodedLogs:
    """The content records of a logs request's bytes, which upb has parsed (``decode``):
    the compiled reader (native/py/src/read/otlp_proto.rs) reads what upb accepted, as upb reads it."""
    from faultgate_stream import _native

    contents: list[SpanRecord] = []
    n = 0
    rejected = _Rejections()
    try:
        scopes = _native.read_logs(data)
    except ValueError as e:  # bytes upb did not parse: a caller's bug, reported as the input's
        raise InputError(f"payload is not an ExportLogsServiceRequest: {e}") from None
    for i, j, rows in scopes:
        for k, (tid, sid, time_ns, observed_ns, event_name, attrs, body, over) in enumerate(rows):
            n += 1
            where = f"resource_logs[{i}].scope_logs[{j}].log_records[{k}]"
            ids = _proto_ids(tid, sid)
            if isinstance(ids, str):
                rejected.add(where, ids.replace("Id", "_id"))
                continue
            if over:  # past a bound: neither its body nor its attributes were read
                rejected.add(where, over, "too_deep")
                continue
            name = log_events.event_name(event_name, attrs)
            try:
                content = log_events.content_attributes(name, attrs, body)
            except InputError as e:  # a GenAI event's body of the wrong shape
                rejected.add(where, str(e))
                continue
            if ids is None or content is None:
                continue
            contents.append(log_events.content_record(ids[0], ids[1], time_ns or observed_ns, content))
    return rejected.decoded(contents, n)


def decode(data: bytes) -> tuple[Any, DecodedLogs]:
    """The parsed request and its content records."""
    request = parse(data)
    return request, read_proto(data)
