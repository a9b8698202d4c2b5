"""The Kafka source: one consumer thread reading OTLP protobuf messages (the collector's
Kafka exporter, ``otlp_proto`` encoding, keyed by trace id) in a consumer group, handing
their spans on like a receiver, and committing offsets only once ``offsets`` says they are
finished.

Why it is shaped this way:
- The exporter keys each message by trace id, so the partitioner puts a trace's spans in
  one partition, and a partition has one owner in the group: a trace's spans meet in one
  replica. The cooperative-sticky assignor moves only the partitions that must move.
- Capacity is never refused to anyone: when the assembler or the export queue is full the
  message is sought back to, every partition paused for the retry delay, and read again.
- A revoked partition is handed over: its runs get ``handover_grace`` to finish, the rest
  are dropped without a verdict (counted) and the new owner re-reads them from the commit.
- ``lease`` keeps, in the commit metadata, how far the group has read, so a new owner
  knows which verdicts are replays.

Every span read is counted by ``ReceiverTelemetry`` (transport ``kafka``) as accepted,
refused (it will be read again) or rejected, as for the OTLP receivers.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import structlog
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition as KTopicPartition
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from faultgate_stream.model.consumers import SpanConsumer
from faultgate_stream.model.errors import InputError
from faultgate_stream.model.telemetry import CATALOG, Telemetry
from faultgate_stream.receive import decode
from faultgate_stream.receive.kafka import lease as leases
from faultgate_stream.receive.kafka.config import KafkaConfig
from faultgate_stream.receive.kafka.lease import Lease
from faultgate_stream.receive.kafka.offsets import OffsetTracker, Progress, TopicPartition
from faultgate_stream.receive.kafka.replay import ReplayLedger
from faultgate_stream.receive.take import take
from faultgate_stream.receive.telemetry import ReceiverTelemetry

log = structlog.get_logger("faultgate_stream.receive.kafka")

# Messages per consume call: enough to amortise the call, few enough that a pause takes
# effect within one batch.
BATCH = 500
POLL_TIMEOUT_S = 0.1
# A message that keeps failing with an internal error (a bug) is tried this often, then
# skipped and counted, so one bad message cannot stop its partition for good.
MAX_INTERNAL_ATTEMPTS = 3
COMMITTED_TIMEOUT_S = 10.0


class KafkaSource:
    def __init__(self, config: KafkaConfig, consumer: SpanConsumer, progress: Progress, telemetry: Telemetry,
                 replays: ReplayLedger, *, max_message_bytes: int,
                 client_factory: Callable[[dict[str, Any]], Any] = Consumer,
                 reader: decode.Reader | None = None) -> None:
        self._cfg = config
        self._reader = reader or decode.Reader()
        self._next = consumer
        self._progress = progress
        self._t = telemetry
        self._rt = ReceiverTelemetry(telemetry, "kafka")
        self._replays = replays
        self._max_bytes = max_message_bytes
        self._factory = client_factory
        self._tracker = OffsetTracker()
        self._leases: dict[TopicPartition, Lease] = {}
        self._paused = ""           # why every partition is paused ("" = not paused)
        self._resume_at = 0.0
        self._internal_attempts: dict[tuple[TopicPartition, int], int] = {}
        self._sought: dict[TopicPartition, int] = {}   # partitions sought back, and to where
        self._last_commit = 0.0
        self._warned_unkeyed = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        telemetry.registry.register(_SourceGauges(self))

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Create the client here, in the caller's thread, so that a client property
        librdkafka refuses stops the service at start with its message."""
        try:
            consumer = self._factory(self._client_config())
        except KafkaException as e:
            raise InputError(f"receive.kafka.client: {e.args[0].str() if e.args else e}") from None
        self._thread = threading.Thread(target=self._run, args=(consumer,), name="kafka-source", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop reading, hand over every partition (runs get ``handover_grace`` to finish;
        what is finished is committed), leave the group. Safe without ``start``, and twice."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self._cfg.handover_grace + 2 * COMMITTED_TIMEOUT_S)
            self._thread = None

    @property
    def pending_messages(self) -> int:
        return self._tracker.pending

    @property
    def partitions(self) -> int:
        return len(self._leases)

    def _client_config(self) -> dict[str, Any]:
        cfg = self._cfg
        conf: dict[str, Any] = {"client.id": "faultgate-stream", "auto.offset.reset": "earliest", **cfg.client,
                                "bootstrap.servers": cfg.brokers, "group.id": cfg.group_id,
                                "enable.auto.commit": False, "enable.auto.offset.store": False,
                                "partition.assignment.strategy": "cooperative-sticky",
                                "error_cb": self._on_error}
        if cfg.group_instance_id:
            conf["group.instance.id"] = cfg.group_instance_id
        return conf

    def _run(self, consumer: Any) -> None:
        consumer.subscribe([self._cfg.topic], on_assign=self._on_assign, on_revoke=self._on_revoke,
                           on_lost=self._on_lost)
        log.info("kafka_source_started", brokers=self._cfg.brokers, topic=self._cfg.topic, group=self._cfg.group_id)
        try:
            while not self._stop.is_set():
                try:
                    self._step(consumer)
                except Exception:  # a bug must not end the source: counted, logged, retried
                    self._t["faultgate_kafka_errors"].labels("internal").inc()
                    self._t["faultgate_internal_errors"].labels("kafka").inc()
                    log.exception("kafka_source_error")
                    self._stop.wait(1.0)
            self._handover(consumer, list(self._leases), commit=True)
        finally:
            consumer.close()
            log.info("kafka_source_stopped")

    # ------------------------------------------------------------ reading
    def _step(self, consumer: Any) -> None:
        now = time.monotonic()
        full = self._tracker.pending >= self._cfg.max_pending_messages
        if self._paused and now >= self._resume_at and not full:
            consumer.resume(consumer.assignment())
            self._paused = ""
        if full and not self._paused:
            self._pause(consumer, "max_pending_messages", 0.2)
        rewound: set[TopicPartition] = set()
        for msg in consumer.consume(BATCH, POLL_TIMEOUT_S):
            err = msg.error()
            if err is not None:
                if err.code() != KafkaError._PARTITION_EOF:
                    self._t["faultgate_kafka_errors"].labels(err.name()).inc()
                    log.warning("kafka_message_error", error=str(err))
                continue
            tp = (msg.topic(), msg.partition())
            # after a refusal the partition is read again from there: later messages of it
            # in this batch will come again; a partition no longer ours is the new owner's
            if tp in rewound or tp not in self._leases:
                continue
            if not self._in_sequence(consumer, tp, msg.offset()):
                continue
            if not self._handle(consumer, msg, tp):
                rewound.add(tp)
        if time.monotonic() - self._last_commit >= self._cfg.commit_interval:
            self._commit(consumer)

    def _in_sequence(self, consumer: Any, tp: TopicPartition, offset: int) -> bool:
        """Hand messages on in offset order, none skipped. A message past the next one
        expected means some were not handed on (a seek that failed while a rebalance was
        under way, a fetch from before it): the partition is read again from where it
        stopped, so no span is passed over and then committed past."""
        sought = self._sought.pop(tp, None)
        if sought is not None:
            if offset < sought:
                self._sought[tp] = sought
                return False
            return True   # the first message from the seek point (later only where the log has a gap)
        expected = self._tracker.log(tp).next_offset
        if expected is None or offset == expected:
            return True
        if offset > expected:
            self._t["faultgate_kafka_errors"].labels("out_of_sequence").inc()
            log.warning("kafka_out_of_sequence", topic=tp[0], partition=tp[1], offset=offset, expected=expected)
            self._seek(consumer, tp, expected)
        return False      # below: handed on already

    def _seek(self, consumer: Any, tp: TopicPartition, offset: int) -> None:
        try:
            consumer.seek(KTopicPartition(tp[0], tp[1], offset))
        except KafkaException as e:
            # the next message out of sequence tries again; nothing past it is handed on
            log.warning("kafka_seek_failed", topic=tp[0], partition=tp[1], offset=offset, error=str(e))
            plog = self._tracker.log(tp)
            if plog.next_offset is None:
                plog.next_offset = offset   # so that a later message past it is seen as out of sequence
            return
        self._sought[tp] = offset

    def _handle(self, consumer: Any, msg: Any, tp: TopicPartition) -> bool:
        """Hand one message on. False when it was refused and will be read again."""
        offset = msg.offset()
        lease = self._leases[tp]
        if not lease.covers(offset) and not self._extend(consumer, tp, offset):
            self._rewind(consumer, tp, offset, "commit_failed", 1.0)
            return False
        if msg.key() is None:
            self._t["faultgate_kafka_unkeyed_messages"].inc()
            if not self._warned_unkeyed:
                self._warned_unkeyed = True
                log.warning("kafka_unkeyed_messages", topic=tp[0],
                            hint="set partition_traces_by_id: true on the collector's kafka exporter, or a "
                                 "trace's spans may reach different replicas")
        value = msg.value() or b""

        def decoded():
            if len(value) > self._max_bytes:
                raise decode.PayloadTooLarge(f"message of {len(value)} bytes is over the limit of "
                                             f"{self._max_bytes} bytes (receive.max_request_bytes)")
            return self._reader.protobuf(value)

        result, refusal = take(decoded, self._next, self._rt)
        if refusal is not None and refusal.retryable:
            key = (tp, offset)
            attempts = self._internal_attempts.get(key, 0) + 1
            if refusal.reason != "internal_error" or attempts < MAX_INTERNAL_ATTEMPTS:
                if refusal.reason == "internal_error":
                    self._internal_attempts[key] = attempts
                self._t["faultgate_kafka_messages"].labels("refused").inc()
                self._rewind(consumer, tp, offset, refusal.reason, refusal.retry_after_s or 1.0)
                return False
            self._internal_attempts.pop(key, None)
            self._rt.rejected_request("internal_error")
            log.error("kafka_message_skipped", topic=tp[0], partition=tp[1], offset=offset, attempts=attempts)
        self._internal_attempts.pop((tp, offset), None)
        traces = {s.trace_id for s in result.spans} if refusal is None and result is not None else set()
        replay = lease.replayed(offset)
        self._tracker.read(tp, offset, traces, replay)
        if replay:
            self._replays.add(traces)
            self._t["faultgate_kafka_replayed_messages"].inc()
        self._t["faultgate_kafka_messages"].labels("taken" if refusal is None else "rejected").inc()
        return True

    def _pause(self, consumer: Any, reason: str, delay: float) -> None:
        consumer.pause(consumer.assignment())
        if not self._paused:
            self._t["faultgate_kafka_pauses"].labels(reason).inc()
        self._paused = reason
        self._resume_at = max(self._resume_at, time.monotonic() + delay)

    def _rewind(self, consumer: Any, tp: TopicPartition, offset: int, reason: str, delay: float) -> None:
        """Read ``offset`` again after ``delay``, with every partition paused until then."""
        self._pause(consumer, reason, delay)
        self._seek(consumer, tp, offset)

    # ------------------------------------------------------------ committing
    def _finish(self) -> None:
        for m in self._tracker.advance(self._progress):
            if m.replay:
                self._replays.forget(m.traces)

    def _commit(self, consumer: Any) -> None:
        self._last_commit = time.monotonic()
        self._finish()
        batch = []
        for tp in self._tracker.partitions():
            lease = self._leases.get(tp)
            plog = self._tracker.log(tp)
            safe = plog.safe_offset()
            if lease is not None and safe is not None and safe != plog.committed:
                batch.append((tp, safe, lease.granted))
        self._commit_offsets(consumer, batch)

    def _extend(self, consumer: Any, tp: TopicPartition, offset: int) -> bool:
        """Record a lease past ``offset`` before handing it on (see ``lease``)."""
        lease = self._leases[tp]
        plog = self._tracker.log(tp)
        safe = plog.safe_offset()
        new = lease.extended(offset, self._cfg.lease_messages)
        if not self._commit_offsets(consumer, [(tp, offset if safe is None else safe, new)]):
            return False
        lease.granted = new
        return True

    def _commit_offsets(self, consumer: Any, items: list[tuple[TopicPartition, int, int]]) -> bool:
        if not items:
            return True
        offsets = [KTopicPartition(t, p, off, metadata=leases.encode(lease)) for (t, p), off, lease in items]
        try:
            answer = consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as e:
            self._t["faultgate_kafka_commits"].labels("failed").inc()
            log.warning("kafka_commit_failed", error=str(e))
            return False
        failed = [tp for tp in answer or () if tp.error is not None]
        if failed:
            self._t["faultgate_kafka_commits"].labels("failed").inc()
            log.warning("kafka_commit_failed", error=str(failed[0].error), partitions=len(failed))
            return False
        self._t["faultgate_kafka_commits"].labels("ok").inc()
        for tp, off, _ in items:
            if tp in self._leases:
                self._tracker.log(tp).committed = off
        return True

    # ------------------------------------------------------------ rebalances
    def _on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        self._t["faultgate_kafka_partition_events"].labels("assigned").inc(len(partitions))
        if not partitions:
            return
        try:
            committed = consumer.committed(partitions, timeout=COMMITTED_TIMEOUT_S)
        except KafkaException as e:
            log.error("kafka_committed_unknown", error=str(e))
            committed = None
        for i, p in enumerate(partitions):
            tp = (p.topic, p.partition)
            self._tracker.remove(tp)
            self._sought.pop(tp, None)
            if committed is None:
                self._leases[tp] = Lease(replay_below=-1, unknown=True)
                continue
            c = committed[i]
            found = leases.decode(c.metadata)
            self._leases[tp] = Lease(replay_below=max(c.offset if c.offset >= 0 else 0, found or 0))
        log.info("kafka_partitions_assigned", partitions=[[p.topic, p.partition] for p in partitions],
                 replay_below={f"{tp[0]}/{tp[1]}": lease.replay_below for tp, lease in self._leases.items()})

    def _on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        self._t["faultgate_kafka_partition_events"].labels("revoked").inc(len(partitions))
        self._handover(consumer, [(p.topic, p.partition) for p in partitions], commit=True)

    def _on_lost(self, consumer: Any, partitions: list[Any]) -> None:
        # lost, not revoked: another member may own them already, so nothing is committed
        self._t["faultgate_kafka_partition_events"].labels("lost").inc(len(partitions))
        self._handover(consumer, [(p.topic, p.partition) for p in partitions], commit=False)

    def _handover(self, consumer: Any, tps: list[TopicPartition], *, commit: bool) -> None:
        """Give runs of these partitions ``handover_grace`` to finish, drop the rest without
        a verdict (the next owner re-reads them from the commit), commit what is finished."""
        tps = [tp for tp in tps if tp in self._leases]
        if not tps:
            return
        deadline = time.monotonic() + (self._cfg.handover_grace if commit else 0.0)
        while True:
            self._finish()
            if not any(self._tracker.log(tp).pending for tp in tps) or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        items = []
        dropped_traces = dropped_spans = 0
        for tp in tps:
            lease = self._leases.pop(tp)
            plog = self._tracker.remove(tp)
            self._sought.pop(tp, None)
            # traces already decided (their messages wait only for export) have nothing
            # in memory to drop: the new owner decides them again, counted as replays
            traces = {t for t in plog.traces() if self._progress.undecided((t,))}
            if traces:
                dropped_traces += len(traces)
                dropped_spans += self._progress.drop(traces)
            for m in plog.pending:
                if m.replay:
                    self._replays.forget(m.traces)
            safe = plog.safe_offset()
            if commit and safe is not None:
                # exactly what we read, never the whole granted block: the next owner then
                # counts as replays only what may really have had a verdict here
                items.append((tp, safe, max(lease.replay_below, plog.next_offset or 0)))
        self._t["faultgate_kafka_handed_over_traces"].inc(dropped_traces)
        self._t["faultgate_kafka_handed_over_spans"].inc(dropped_spans)
        committed = self._commit_offsets(consumer, items) if items else True
        log.info("kafka_partitions_handed_over", partitions=[list(tp) for tp in tps], dropped_traces=dropped_traces,
                 dropped_spans=dropped_spans, committed=committed and bool(items))

    def _on_error(self, err: Any) -> None:
        self._t["faultgate_kafka_errors"].labels(err.name()).inc()
        log.warning("kafka_client_error", error=str(err))


class _SourceGauges(Collector):
    def __init__(self, source: KafkaSource) -> None:
        self._s = source

    def collect(self):
        for name, value in (("faultgate_kafka_pending_messages", self._s.pending_messages),
                            ("faultgate_kafka_partitions", self._s.partitions)):
            g = GaugeMetricFamily(name, next(s.help for s in CATALOG if s.name == name))
            g.add_metric([], value)
            yield g
