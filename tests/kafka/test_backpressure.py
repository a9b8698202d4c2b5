"""Bounded: when the export queue is full the Kafka source pauses its partitions and reads
the refused message again later; nothing is refused to anyone, nothing is dropped.

The topic is filled with exactly the messages the collector's Kafka exporter writes
(``otlp_proto`` values, one trace per message, the trace id in hex as the key: checked
against the real exporter in test_durability.py) by confluent-kafka's producer, so the
whole backlog is there before the replica starts."""
from __future__ import annotations

from confluent_kafka import Producer

from tests.e2e.downstream import agent_run_request, downstream_config, span_keys
from tests.kafka.replicas import downstream_keys, downstream_roots, replica
from tests.peers import eventually, free_port, running_collector

RUNS = 300


def test_a_full_export_queue_pauses_the_partitions_until_the_downstream_drains_it(tmp_path, kafka_broker):
    topic = group = "backpressure"
    kafka_broker.create_topic(topic, 4)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap})
    sent: set[tuple[str, str]] = set()
    for run in range(RUNS):
        req = agent_run_request(run)
        trace = req.resource_spans[0].scope_spans[0].spans[0].trace_id
        producer.produce(topic, req.SerializeToString(), key=trace.hex())
        sent |= span_keys(req)
    assert producer.flush(30) == 0
    del producer  # its connection must not outlive the test (it would log against a stopped broker)
    down, out = free_port(), tmp_path / "out"
    out.mkdir()
    r = replica(tmp_path, "r", bootstrap=kafka_broker.bootstrap, topic=topic, group=group, downstream=down)
    # a queue of 100 spans, with the downstream not there yet: it fills within 20 runs
    r.config.write_text(r.config.read_text().replace("retry_max_interval: 1s}",
                                                     "retry_max_interval: 1s, queue_spans: 100}"))
    r.start()
    try:
        eventually(lambda: r.metric("faultgate_kafka_pauses_total") > 0, timeout=60, what="a pause at the bound")
        assert r.metric("faultgate_kafka_messages_total") < RUNS
        with running_collector(downstream_config(down, out), tmp_path, name="downstream"):
            keys = eventually(lambda: (k := downstream_keys(out)) >= sent and k, timeout=120,
                              what="every span downstream once the queue drains")
            eventually(lambda: r.metric("faultgate_kafka_pending_messages") == 0, timeout=60, what="all committed")
            roots = downstream_roots(out)
            refused = r.metric("faultgate_receiver_refused_spans_total")
            accepted = r.metric("faultgate_receiver_accepted_spans_total")
    finally:
        r.stop()
    assert keys >= sent
    assert {t for t, _, _ in roots} == {k[0] for k in sent}
    # every span is counted: refused ones were read again and then accepted once
    assert accepted == len(sent) and refused > 0
