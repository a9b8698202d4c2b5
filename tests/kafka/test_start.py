"""A client property librdkafka refuses stops ``serve`` at start, naming it (exit 2), instead
of leaving a service up whose Kafka source never ran."""
from __future__ import annotations

import os
import subprocess
import sys


def test_serve_exits_2_naming_a_client_property_librdkafka_refuses():
    env = {**os.environ, "FAULTGATE_STREAM__RECEIVE__KAFKA__BROKERS": "127.0.0.1:9",
           "FAULTGATE_STREAM__RECEIVE__KAFKA__CLIENT": '{"no.such.property": "1"}',
           "FAULTGATE_STREAM__RECEIVE__GRPC_ENDPOINT": "127.0.0.1:0",
           "FAULTGATE_STREAM__RECEIVE__HTTP_ENDPOINT": "127.0.0.1:0",
           "FAULTGATE_STREAM__METRICS__ENDPOINT": "127.0.0.1:0"}
    done = subprocess.run([sys.executable, "-m", "faultgate_stream.cli.main", "serve"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert 'receive.kafka.client: No such configuration property: "no.such.property"' in done.stderr
