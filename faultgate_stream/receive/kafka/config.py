"""Kafka source settings (``receive.kafka``). Empty ``brokers`` = no Kafka source."""
from __future__ import annotations

from dataclasses import dataclass, field

from faultgate_stream.model.settings import DURATION

# The collector's Kafka exporter writes traces to this topic unless told otherwise.
DEFAULT_TOPIC = "otlp_spans"
DEFAULT_GROUP_ID = "faultgate-stream"
# How often offsets that became safe are committed. A crash re-reads at most what was
# decided in this window (plus what was still in flight), so a second costs little re-work
# and one synchronous commit a second per replica.
DEFAULT_COMMIT_INTERVAL_S = 1.0
# Messages a replica may read past what the group has recorded as read (the lease in the
# commit's metadata). After a crash the next owner counts verdicts from re-read messages
# below the lease as replays: a smaller lease counts fewer runs that were never decided
# before the crash as replays, at one synchronous commit per block read.
DEFAULT_LEASE_MESSAGES = 1000
# Messages read and not yet committable (their runs in flight or their spans in the export
# queue). At the bound the source pauses its partitions instead of reading on; each message
# costs its trace ids (about 100 bytes), so the default holds about 10 MB.
DEFAULT_MAX_PENDING_MESSAGES = 100_000
# On a rebalance (or SIGTERM) a replica gives its runs in flight this long to be decided
# and exported before it drops them for the new owner to re-read. It must stay well below
# the consumer's max.poll.interval.ms (5 min by default) or the group evicts the replica.
DEFAULT_HANDOVER_GRACE_S = 5.0

# Set by the source itself: overriding them would break the commit rule.
OWNED_CLIENT_KEYS = frozenset({"bootstrap.servers", "group.id", "group.instance.id", "enable.auto.commit",
                               "enable.auto.offset.store", "partition.assignment.strategy"})


@dataclass(frozen=True, kw_only=True)
class KafkaConfig:
    brokers: str = ""                 # "host:port,host:port"; "" disables the Kafka source
    topic: str = DEFAULT_TOPIC
    group_id: str = DEFAULT_GROUP_ID
    # Static membership (KIP-345): a replica restarted with the same id (a StatefulSet pod
    # name) gets its partitions back at once instead of after the session timeout.
    group_instance_id: str = ""
    # Any other librdkafka consumer property (security.protocol, sasl.*, ssl.*,
    # session.timeout.ms, ...), passed as is.
    client: dict[str, str] = field(default_factory=dict)
    commit_interval: float = field(default=DEFAULT_COMMIT_INTERVAL_S, metadata=DURATION)
    lease_messages: int = DEFAULT_LEASE_MESSAGES
    max_pending_messages: int = DEFAULT_MAX_PENDING_MESSAGES
    handover_grace: float = field(default=DEFAULT_HANDOVER_GRACE_S, metadata=DURATION)

    @property
    def enabled(self) -> bool:
        return bool(self.brokers)

    def validate(self) -> list[str]:
        problems = []
        if self.brokers and not all(":" in b and b.rsplit(":", 1)[1].isdigit()
                                    for b in self.brokers.split(",")):
            problems.append(f"brokers: must be host:port[,host:port...], not {self.brokers!r}")
        for name in ("topic", "group_id"):
            if not getattr(self, name):
                problems.append(f"{name}: must not be empty")
        for name in ("lease_messages", "max_pending_messages"):
            if getattr(self, name) < 1:
                problems.append(f"{name}: must be >= 1")
        if not self.commit_interval > 0:
            problems.append("commit_interval: must be > 0")
        if not self.handover_grace >= 0:
            problems.append("handover_grace: must be >= 0")
        for key in sorted(set(self.client) & OWNED_CLIENT_KEYS):
            problems.append(f"client.{key}: set by faultgate-stream itself; use the kafka keys above")
        return problems
