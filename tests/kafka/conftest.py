"""One broker for every test in tests/kafka: it takes ~30 s to start on this machine, and
each test uses topics and groups of its own, so sharing it couples nothing."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.kafka.broker import Broker, running_broker


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory) -> Iterator[Broker]:
    with running_broker(tmp_path_factory.mktemp("kafka")) as broker:
        yield broker
