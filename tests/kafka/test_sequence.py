"""Messages are handed on in offset order with none skipped: a message past the one
expected (after a seek that failed mid-rebalance, say) sends the partition back to where
it stopped instead of being handed on, so no span is passed over and committed past.

A fake consumer here, because a broker cannot be made to skip on demand; everything else
(decoding, the tracker, the assembler) is real."""
from __future__ import annotations

from confluent_kafka import KafkaException

from faultgate_stream.model.telemetry import Telemetry
from faultgate_stream.receive.kafka.config import KafkaConfig
from faultgate_stream.receive.kafka.replay import ReplayLedger
from faultgate_stream.receive.kafka.source import KafkaSource
from tests.e2e.downstream import agent_run_request
from tests.kafka.test_offsets import FakeProgress


class Msg:
    def __init__(self, offset: int, value: bytes) -> None:
        self._offset, self._value = offset, value

    def error(self):
        return None

    def topic(self):
        return "t"

    def partition(self):
        return 0

    def offset(self):
        return self._offset

    def key(self):
        return b"k"

    def value(self):
        return self._value


class FakeConsumer:
    def __init__(self, batches, seek_fails: bool = False) -> None:
        self.batches = list(batches)
        self.sought: list[int] = []
        self.seek_fails = seek_fails

    def consume(self, n, timeout):
        return self.batches.pop(0) if self.batches else []

    def seek(self, tp):
        if self.seek_fails:
            raise KafkaException("partition being moved")
        self.sought.append(tp.offset)

    def commit(self, offsets, asynchronous):
        return offsets

    def pause(self, tps):
        pass

    def resume(self, tps):
        pass

    def assignment(self):
        return []


class Taken:
    def __init__(self) -> None:
        self.spans = []

    def consume(self, spans, request=None):
        self.spans += spans


def _source(taken: Taken) -> KafkaSource:
    telemetry = Telemetry()
    src = KafkaSource(KafkaConfig(brokers="k:1"), taken, FakeProgress(), telemetry,
                      ReplayLedger(telemetry["faultgate_kafka_replayed_verdicts"]), max_message_bytes=1 << 20)
    from faultgate_stream.receive.kafka.lease import Lease
    src._leases[("t", 0)] = Lease(replay_below=0)
    return src


def _msg(offset: int) -> Msg:
    return Msg(offset, agent_run_request(offset).SerializeToString())


def test_a_message_past_a_gap_is_not_handed_on_and_the_partition_is_read_again_from_the_gap():
    taken = Taken()
    consumer = FakeConsumer([[_msg(0), _msg(1)], [_msg(3)], [_msg(2), _msg(3)]])
    src = _source(taken)
    for _ in range(3):
        src._step(consumer)
    assert consumer.sought == [2]
    runs = sorted({s.trace_id for s in taken.spans})
    assert runs == sorted({agent_run_request(i).resource_spans[0].scope_spans[0].spans[0].trace_id.hex()
                           for i in range(4)})
    assert src._tracker.log(("t", 0)).next_offset == 4


def test_after_a_failed_seek_nothing_past_the_refused_message_is_handed_on():
    taken = Taken()
    consumer = FakeConsumer([[_msg(6), _msg(7)]], seek_fails=True)   # fetched before the refusal
    src = _source(taken)
    src._rewind(consumer, ("t", 0), 5, "export_queue", 0.0)   # 5 was refused; the seek back fails
    src._step(consumer)
    assert taken.spans == []                                   # 6 and 7 wait for 5
