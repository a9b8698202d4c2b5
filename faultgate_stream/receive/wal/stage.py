"""The write-ahead log as a stage: in front of the span path, behind the OTLP receivers.

For each request a receiver decoded: its bytes, as received, are appended to the log and
made durable (``segments``), and only then handed on; so once the sender hears "accepted"
the request is on disk. A request the stages after refuse (a full assembler, say) is
voided in the log, so that no restart replays what was never acknowledged.

What is finished is the Kafka source's rule, with the same accounting
(``receive/kafka/offsets.py``): a request is finished once every run it brought spans to is
decided and everything deciding queued for export has left the export queue. Requests are
the tracker's messages, numbered by their sequence in the log (one partition). Every
``checkpoint_interval`` a checkpoint records the first unfinished request, the sequence
read up to, and the unfinished ones between (``segments.Checkpoint``); segments below the
first are deleted. Unlike a Kafka offset, a checkpoint is not one point: requests carry
parts of many runs (children in one, their root in the next), so under steady load there is
never a point that no run straddles, and the Kafka commit point, which waits for one, would
never move. Naming the unfinished requests instead, a replay re-reads exactly those.
Requests reach the tracker in sequence order (a request handed on later may finish its
hand-over first: ``_settled`` waits for the ones before it), and only once handed on, so
none is finished before its spans are in.

On start, before the receivers open, every request the last checkpoint does not cover is
read back and handed on again, counted as received over transport ``wal``; its runs are
decided again, and their verdicts counted as replayed (``ReplayLedger``, as for Kafka:
idempotent by run key downstream, the count an upper bound on duplicates).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import structlog
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from faultgate_stream.model.consumers import ContentConsumer, SpanConsumer
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.model.telemetry import Telemetry, describe
from faultgate_stream.model.threads import Threads
from faultgate_stream.read.otlp_proto import Received
from faultgate_stream.receive import decode
from faultgate_stream.receive.kafka.offsets import OffsetTracker, Progress
from faultgate_stream.receive.kafka.replay import ReplayLedger
from faultgate_stream.receive.take import take, take_logs
from faultgate_stream.receive.telemetry import LogsTelemetry, ReceiverTelemetry
from faultgate_stream.receive.wal.config import WalConfig
from faultgate_stream.receive.wal.segments import (CHECKPOINT, LOGS, LOGS_JSON, REQUEST, VOID, Checkpoint,
                                                   SegmentLog)

log = structlog.get_logger("faultgate_stream.receive.wal")

PARTITION = ("wal", 0)   # the log is one ordered stream: one partition of the tracker
# A logged request whose hand-over keeps failing with an internal error (a bug) is tried
# this often at start, then counted as rejected and left behind, as the Kafka source does:
# one bad record must not hold every start up for ever.
MAX_INTERNAL_ATTEMPTS = 3


class WriteAheadLog:
    """A ``SpanConsumer`` wrapping the next one (span export's tee, or the assembler), and a
    ``ContentConsumer`` wrapping the assembler's: GenAI content from log records is logged
    and replayed the same way, so that a replayed run gets its content back too."""

    def __init__(self, config: WalConfig, consumer: SpanConsumer, progress: Progress, telemetry: Telemetry,
                 replays: ReplayLedger, threads: Threads, reader: decode.Reader | None = None,
                 contents: ContentConsumer | None = None) -> None:
        self._cfg = config
        self._next = consumer
        self._contents = contents
        self._progress = progress
        self._t = telemetry
        self._replays = replays
        self._threads = threads
        self._reader = reader or decode.Reader()
        self._spans_telemetry = ReceiverTelemetry(telemetry, "wal")
        self._logs_telemetry = LogsTelemetry(telemetry, "wal")
        self.log = SegmentLog(config, telemetry)
        self._tracker = OffsetTracker()
        self._lock = threading.Lock()          # the tracker and the hand-over order
        self._settled: dict[int, tuple[str, ...]] = {}
        self._next_read = 1                    # the first sequence not yet given to the tracker
        self._checkpoint = Checkpoint()
        # requests a replay stopped before (SIGTERM during it): uncovered until the next start
        self._unreplayed: list[int] = []
        self._stop = threading.Event()
        self._stopped = False
        self._sync_thread: threading.Thread | None = None
        self._checkpoint_thread: threading.Thread | None = None
        self.recovery_seconds = 0.0
        telemetry.registry.register(_WalGauges(self))

    # ------------------------------------------------------------ the hot path
    def consume(self, spans: list[SpanRecord], request: Received | None = None) -> object:
        if request is None:   # an in-process producer: nothing to replay it from
            return self._next.consume(spans, request)
        return self._logged(request.body, REQUEST, spans, lambda: self._next.consume(spans, request))

    def consume_contents(self, contents: list[SpanRecord], request: Any = None) -> object:
        assert self._contents is not None
        if request is None:
            return self._contents.consume_contents(contents, request)
        # OTLP/JSON logs come as their body (decode.logs_json), protobuf ones parsed
        body, kind = (request, LOGS_JSON) if isinstance(request, bytes) else (request.SerializeToString(), LOGS)
        return self._logged(body, kind, contents, lambda: self._contents.consume_contents(contents, request))

    def _logged(self, body: bytes, kind: int, records: list[SpanRecord], hand_on: Callable[[], object]) -> object:
        """Log ``body``, wait until it is durable, then hand it on (``hand_on``)."""
        seq, ticket = self.log.append(body, kind)   # CapacityError: full, or a failing disk
        traces: tuple[str, ...] = ()
        try:
            self.log.wait(ticket)
            result = hand_on()
            traces = tuple({s.trace_id for s in records})
            return result
        except BaseException:
            # never acknowledged: a restart must not replay it (if this record is lost, the
            # replay only repeats spans the sender is retrying anyway)
            self._void(seq)
            raise
        finally:
            self._hand_over(seq, traces)

    def _void(self, seq: int) -> None:
        try:
            self.log.mark(VOID, seq)
        except Exception:  # counted by the log; the refusal the sender gets stands
            pass

    def _hand_over(self, seq: int, traces: tuple[str, ...]) -> None:
        with self._lock:
            self._settled[seq] = traces
            while self._next_read in self._settled:
                self._tracker.read(PARTITION, self._next_read, self._settled.pop(self._next_read))
                self._next_read += 1

    # ------------------------------------------------------------ start: replay
    def start(self) -> None:
        """Open the log, replay what no checkpoint covers (before the receivers open), then
        start the sync and checkpoint threads."""
        started = time.monotonic()
        recovered = self.log.open()
        if self._cfg.fsync == "batch":
            self._sync_thread = self._threads.start("wal-sync", lambda: self.log.sync_loop(self._stop.is_set))
        self._checkpoint = recovered.checkpoint
        if recovered.requests:
            log.info("wal_replaying", requests=len(recovered.requests), checkpoint=recovered.checkpoint.first)
        spans = 0
        done: set[int] = set()
        for entry in recovered.requests:
            if self._stop.is_set():
                break
            try:
                body = self.log.read(entry)
            except OSError as e:
                self._t["faultgate_wal_errors"].labels("read").inc()
                log.error("wal_replay_read_failed", seq=entry.seq, error=str(e))
                continue
            n = self._replay(entry.seq, entry.kind, body)
            if n is None:
                break
            spans += n
            done.add(entry.seq)
        replayed = len(done)
        self._unreplayed = [e.seq for e in recovered.requests if e.seq not in done]
        with self._lock:
            self._next_read = self.log.next_seq
        self.recovery_seconds = time.monotonic() - started
        self._t["faultgate_wal_replayed_requests"].inc(replayed)
        log.info("wal_opened", dir=self._cfg.dir, fsync=self._cfg.fsync, checkpoint=recovered.checkpoint.first,
                 replayed_requests=replayed, replayed_spans=spans, cut_bytes=recovered.cut_bytes,
                 seconds=round(self.recovery_seconds, 3))
        self._checkpoint_thread = self._threads.start("wal-checkpoint", self._checkpoint_loop)

    def _replay(self, seq: int, kind: int, body: bytes) -> int | None:
        """Hand one logged request on again, waiting out refusals for capacity (runs
        complete meanwhile); its runs' verdicts count as replayed. The spans taken, or None
        when the service stopped before they could be."""
        traces: tuple[str, ...] = ()
        counted = False
        attempts = 0
        if kind == REQUEST:
            parse, hand, consumer, telemetry = self._reader.protobuf, take, self._next, self._spans_telemetry
        else:
            parse = decode.logs_protobuf if kind == LOGS else decode.logs_json
            hand, consumer, telemetry = take_logs, self._contents, self._logs_telemetry
        while True:
            def decoded() -> tuple[Any, Any]:
                request, d = parse(body)
                nonlocal traces, counted
                traces = tuple({s.trace_id for s in (d.spans if kind == REQUEST else d.contents)})
                if not counted:   # before the spans go in: their verdicts may come at once
                    self._replays.add(traces)
                    counted = True
                return request, d

            result, refusal = hand(decoded, consumer, telemetry)  # type: ignore[operator]
            if refusal is None or not refusal.retryable:
                break   # taken, or rejected for good (counted): either way finished with
            if refusal.reason == "internal_error":
                attempts += 1
                if attempts >= MAX_INTERNAL_ATTEMPTS:
                    telemetry.rejected_request("internal_error")
                    log.error("wal_replay_skipped", seq=seq, attempts=attempts)
                    break
            if self._stop.wait(refusal.retry_after_s or 1.0):
                self._replays.forget(traces)
                return None
        with self._lock:
            # the ledger forgets the traces when this message finishes
            self._tracker.read(PARTITION, seq, traces, replay=True)
        if refusal is not None or result is None:
            return 0
        return len(result.spans) if kind == REQUEST else len(result.contents)

    # ------------------------------------------------------------ checkpoints
    def _checkpoint_loop(self) -> None:
        while not self._stop.wait(self._cfg.checkpoint_interval):
            try:
                self.checkpoint()
            except Exception:  # a bug must not end checkpoints: counted, logged, tried again
                self._t["faultgate_internal_errors"].labels("wal_checkpoint").inc()
                log.exception("wal_checkpoint_failed")

    def checkpoint(self) -> Checkpoint:
        """Record what is finished, and delete the segments wholly below the first request
        that is not."""
        with self._lock:
            for m in self._tracker.advance(self._progress, whole_traces=False):
                if m.replay:
                    self._replays.forget(m.traces)
            unfinished = self._tracker.unfinished(PARTITION, self._progress) + self._unreplayed
            through = self._next_read
        first = min(unfinished, default=through)
        point = Checkpoint(first, through, frozenset(unfinished))
        if point == self._checkpoint:
            return point
        try:
            self.log.mark(CHECKPOINT, first, point.encode())
        except Exception:  # counted by the log; the next interval tries again
            return self._checkpoint
        if self.log.sync():
            self._checkpoint = point
            self.log.delete_covered(first)
        return self._checkpoint

    @property
    def pending_requests(self) -> int:
        return self._tracker.pending + len(self._settled)

    # ------------------------------------------------------------ stop
    def stop(self) -> None:
        """After the service has decided every run and flushed the export queue: a last
        checkpoint (covering everything finished), then close. Safe twice."""
        if self._stopped:
            return
        self._stopped = True
        self._stop.set()
        if self._checkpoint_thread is not None:
            self._checkpoint_thread.join(timeout=10)
        if self._sync_thread is not None:
            self._sync_thread.join(timeout=10)
        try:
            if self.log.opened:
                self.checkpoint()
        finally:
            self.log.close()


class _WalGauges(Collector):
    def __init__(self, wal: WriteAheadLog) -> None:
        self._w = wal

    def collect(self) -> Iterable[GaugeMetricFamily]:
        for name, value in (("faultgate_wal_bytes", self._w.log.bytes),
                            ("faultgate_wal_max_bytes", self._w._cfg.max_bytes),
                            ("faultgate_wal_segments", self._w.log.segments),
                            ("faultgate_wal_pending_requests", self._w.pending_requests),
                            ("faultgate_wal_recovery_seconds", self._w.recovery_seconds)):
            g = GaugeMetricFamily(name, describe(name))
            g.add_metric([], value)
            yield g
