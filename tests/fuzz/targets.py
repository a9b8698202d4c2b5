"""The fuzz targets: each feeds one input through the code a real input meets, and
raises ``InternalError`` when the answer is a bug rather than a verdict on the input.

- ``receive``: a request body through the receivers' own path (``receive.take`` with the
  gRPC/HTTP decoders) into the in-process service engine: forwarder, live assembler,
  every check (a policy that exercises every rule), sinks; then the clock moves on and the
  completion scan decides every run. An internal error is a refusal classified
  ``internal_error``, a counted check/scan/sink/export error, or a dead thread.
  ``receive_logs`` does the same for a logs request; ``hostile`` sends a request of
  tests/fuzz/hostile.py every way it goes, and also refuses any retryable answer (nothing
  it sends is capacity) and any count of taken spans but the reader's.
- ``offline``: a parsed document through every offline reader (``read_document`` in each
  format) and, when one reads it, through the offline checks.
- ``check_file``: raw file bytes through ``faultgate-stream check``: exit 0/1/2 and, on
  2, one line on stderr; never a traceback.
"""
from __future__ import annotations

import contextlib
import functools
import io
import tempfile
from pathlib import Path

from faultgate_stream.assemble.assembler import Assembler
from faultgate_stream.assemble.config import AssembleConfig
from faultgate_stream.assemble.live import LiveAssembler
from faultgate_stream.checks.policy import load_policy
from faultgate_stream.checks.registry import select
from faultgate_stream.cli import main as cli_main
from faultgate_stream.export.spans.config import SpansExportConfig
from faultgate_stream.export.spans.forward import Forwarder
from faultgate_stream.export.spans.sink import SpanSink
from faultgate_stream.export.spans.state import ExportState
from faultgate_stream.export.metrics.sink import MetricsSink
from faultgate_stream.model.clock import ManualClock
from faultgate_stream.model.consumers import VerdictFanout
from faultgate_stream.model.errors import InputError
from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.pipeline import VerdictList, check_spans
from faultgate_stream.read.files import FORMATS, read_document
from faultgate_stream.receive import decode
from faultgate_stream.receive.take import take, take_logs
from faultgate_stream.receive.telemetry import LogsTelemetry, ReceiverTelemetry
from faultgate_stream.verdict.evaluate import Evaluator

POLICY = Path(__file__).with_name("policy.json")


class InternalError(AssertionError):
    """The code under test answered with a bug."""


@functools.lru_cache(maxsize=1)
def _policy():
    return load_policy(str(POLICY))


def all_checks():
    return select(None, policy=_policy())  # checks keep no state of their own: one policy serves all


class Engine:
    """The service's engine in process, on a manual clock, with every counter it keeps."""

    def __init__(self) -> None:
        self.telemetry = Telemetry()
        self.clock = ManualClock(1_700_000_000 * 10**9)
        self.verdicts = VerdictList()
        cfg = SpansExportConfig(endpoint="127.0.0.1:1", queue_spans=100_000)
        self.export = ExportState.build(cfg, self.telemetry, lambda s: s)
        fanout = VerdictFanout([MetricsSink(self.telemetry, 50), SpanSink(self.export), self.verdicts],
                               lambda sink: self.telemetry["faultgate_internal_errors"].labels(f"sink_{sink}").inc())
        evaluator = Evaluator(all_checks(), fanout, telemetry=self.telemetry)
        asm = Assembler(evaluator, self.clock, AssembleConfig(root_grace=1, max_traces=1000, max_spans_per_trace=500,
                                                              idle_timeout=5, max_run_duration=20))
        self.live = LiveAssembler(asm, self.clock, self.telemetry, tick=0.5)
        self.ingest = Forwarder(self.live, self.export)
        self.receivers = {t: ReceiverTelemetry(self.telemetry, t) for t in ("grpc", "http")}
        self.logs_receivers = {t: LogsTelemetry(self.telemetry, t) for t in ("grpc", "http")}

    def errors(self) -> float:
        # the three counters alone: collecting the whole registry per input was most of a target's time
        total = 0.0
        for name in ("faultgate_internal_errors", "faultgate_check_errors", "faultgate_thread_deaths"):
            for metric in self.telemetry[name].collect():
                total += sum(s.value for s in metric.samples if s.name.endswith("_total"))
        return total

    def receive(self, body: bytes, transport: str = "grpc", json: bool = False):
        parse = decode.json_body if json else decode.protobuf
        before = self.errors()
        return self._settle(before, take(lambda: parse(body), self.ingest, self.receivers[transport]))

    def receive_logs(self, body: bytes, transport: str = "grpc", json: bool = False):
        parse = decode.logs_json if json else decode.logs_protobuf
        before = self.errors()
        return self._settle(before, take_logs(lambda: parse(body), self.live, self.logs_receivers[transport]))

    def hostile(self, h) -> list[str]:
        """Sends ``h`` (tests/fuzz/hostile.py) every way it goes; its answers."""
        answers = []
        for body, json in ((h.proto, False), (h.json, True)):
            if body is None:
                continue
            decoded, refusal = (self.receive if h.signal == "traces" else self.receive_logs)(body, "http", json)
            if refusal is not None:
                if refusal.retryable:
                    raise InternalError(f"{h.cls}: a retryable answer ({refusal.message}) to input that cannot succeed")
                answers.append(refusal.reason)
                continue
            taken = len(decoded.spans) if h.signal == "traces" else decoded.records - decoded.rejected
            if taken + decoded.rejected != h.offered:
                raise InternalError(f"{h.cls}: {h.offered} offered, {taken} taken and {decoded.rejected} rejected")
            answers.append("partial" if decoded.rejected else "ok")
        return answers

    def _settle(self, before: float, outcome):
        decoded, refusal = outcome
        if refusal is not None and refusal.reason == "internal_error":
            raise InternalError(f"refused as {refusal.message}")
        self.clock.advance(30)  # every run due: grace, idle and max-duration all pass
        self.live.consume([])
        if self.errors() != before:
            raise InternalError("an internal error was counted while deciding runs (see the log)")
        # the export queue is never drained here: give back what was queued
        q = self.export.queue
        items = q.take(10**9, 10**12, 0)
        q.done(sum(i.spans for i in items), items)
        return decoded, refusal


def offline(doc) -> None:
    for fmt in FORMATS[1:]:
        if fmt == "otlp-proto":
            continue
        try:
            _, spans = read_document(doc, fmt)
        except InputError:
            continue
        except Exception as e:
            raise InternalError(f"reading as {fmt}: {type(e).__name__}: {e}") from e
        try:
            check_spans([spans], all_checks())
        except Exception as e:
            raise InternalError(f"checking what {fmt} read: {type(e).__name__}: {e}") from e


def check_file(data: bytes, suffix: str = ".json") -> tuple[int, str]:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"traces{suffix}"
        path.write_bytes(data)
        err, out = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                code = cli_main.main(["check", str(path)])
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 2
            except Exception as e:
                raise InternalError(f"check raised {type(e).__name__}: {e}") from e
    text = err.getvalue()
    if code not in (0, 1, 2):
        raise InternalError(f"check exited {code}: {text[-500:]}")
    if "Traceback" in text or "Traceback" in out.getvalue():
        raise InternalError(f"check printed a traceback: {text[-2000:]}")
    if code == 2 and len(text.strip().splitlines()) != 1:
        raise InternalError(f"check exited 2 without one line on stderr: {text!r}")
    return code, text
