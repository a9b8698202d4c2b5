"""The live verdict stream: a ``VerdictConsumer`` that serves ``faultgate.stream.v1.VerdictService``.

Contract
--------
* Publishing never waits for a subscriber. ``verdict(v)`` puts the encoded verdict on the
  bounded queue of each subscriber whose filters it matches, and returns. When a queue is
  full the verdict is dropped for that subscriber alone and counted (``dropped``, and
  ``faultgate_stream_dropped_verdicts_total{reason="queue_full"}`` when a registry is
  given); every other subscriber, and the rest of the service, is unaffected.
* A subscriber gets each matching verdict published while it is subscribed exactly once
  (unless dropped), in publish order. Nothing is replayed from before it subscribed.
* What leaves the process is what ``encode`` made: every reason and the scenario key masked.
* Subscribers are capped (``StreamConfig.max_subscribers``); one past the cap is refused
  with RESOURCE_EXHAUSTED.
* A request that is not a ``SubscribeRequest`` (another message, a string that is not
  UTF-8) is refused with INVALID_ARGUMENT naming why: it is parsed here, not by grpc, whose
  own failure to deserialize is INTERNAL and a logged traceback (issue 42).
* ``close()`` ends every stream with OK once what is queued for it has been sent, and
  refuses later subscriptions with UNAVAILABLE.
* A client's cancel (or a deadline, or the server stopping) ends its stream and frees its
  slot at once: the RPC's done-callback wakes the handler waiting for the next verdict.

Threads: sync gRPC runs a response stream on one worker thread of the hosting server for
the stream's whole life. The server that serves ``handler()`` needs ``max_subscribers``
workers on top of those its other services use, or open streams starve them (OTLP Export
calls would queue behind idle subscribers).
"""
from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator

import grpc
from google.protobuf.message import DecodeError
from prometheus_client import CollectorRegistry, Counter

from faultgate_stream.export.stream.config import StreamConfig
from faultgate_stream.export.stream.encode import encode, encode_session
from faultgate_stream.export.stream.gen import verdict_pb2 as pb
from faultgate_stream.model.session import SessionVerdict
from faultgate_stream.model.verdict import FAILED, EarlyFinding, RunVerdict

SERVICE = pb.DESCRIPTOR.services_by_name["VerdictService"].full_name  # faultgate.stream.v1.VerdictService
DROPPED_METRIC = "faultgate_stream_dropped_verdicts"  # exposed with Prometheus' _total suffix
QUEUE_FULL = "queue_full"


class _Subscriber:
    """One stream's filters and its bounded queue of serialized verdicts."""

    __slots__ = ("agents", "only_failed", "sessions", "_capacity", "_items", "_cond", "_open")

    def __init__(self, request: pb.SubscribeRequest, capacity: int) -> None:
        self.agents = frozenset(request.agents)
        self.only_failed = request.only_failed
        self.sessions = request.sessions
        self._capacity = capacity
        self._items: deque[bytes] = deque()
        self._cond = threading.Condition(threading.Lock())
        self._open = True

    def wants(self, v: RunVerdict) -> bool:
        return (not self.agents or v.agent in self.agents) and not (self.only_failed and not v.failed)

    def wants_session(self, s: SessionVerdict) -> bool:
        return self.sessions and (not self.agents or s.agent in self.agents) and not (
            self.only_failed and s.verdict != FAILED)

    def offer(self, payload: bytes) -> bool:
        """Queue one verdict; False, and nothing queued, when the queue is full. Never waits."""
        with self._cond:
            if len(self._items) >= self._capacity:
                return False
            self._items.append(payload)
            self._cond.notify()
            return True

    def end(self, *, drain: bool) -> None:
        """No more verdicts. With ``drain`` what is queued is still handed out; without, it is discarded."""
        with self._cond:
            self._open = False
            if not drain:
                self._items.clear()
            self._cond.notify_all()

    def take(self) -> bytes | None:
        """The next verdict, waiting for one; None once the stream has ended and nothing is left."""
        with self._cond:
            while not self._items and self._open:
                self._cond.wait()
            return self._items.popleft() if self._items else None


class VerdictStream:
    """A ``VerdictConsumer`` fanning verdicts out to gRPC subscribers; ``handler()`` serves them."""

    def __init__(self, redact: Callable[[str], str], config: StreamConfig | None = None, *,
                 registry: CollectorRegistry | None = None) -> None:
        self.config = config or StreamConfig()
        problems = self.config.validate()
        if problems:
            raise ValueError("invalid stream config: " + "; ".join(problems))
        self._redact = redact
        # Guards the subscriber set and serialises publishing, so every subscriber sees
        # verdicts in one order and "subscribed when published" has one meaning.
        self._lock = threading.Lock()
        # Replaced, never mutated: ``verdict`` reads it without the lock to skip encoding
        # when nobody wants the verdict, the common case.
        self._subs: tuple[_Subscriber, ...] = ()
        self._closed = False
        self.dropped = 0   # verdicts not delivered to some subscriber because its queue was full
        self.refused = 0   # subscriptions refused because max_subscribers were open
        self._dropped_metric = None
        if registry is not None:
            self._dropped_metric = Counter(
                DROPPED_METRIC, "Verdicts the live stream dropped for one subscriber, by reason "
                "(queue_full: the subscriber read too slowly).", ["reason"], registry=registry).labels(QUEUE_FULL)

    def subscribers(self) -> int:
        """Streams open now."""
        return len(self._subs)

    def early(self, finding: EarlyFinding) -> None:
        """Nothing: early findings reach subscribers inside their run's verdict (``Verdict.early``)."""

    def verdict(self, v: RunVerdict) -> None:
        subs = self._subs
        if not subs or not any(s.wants(v) for s in subs):  # most verdicts: no one listens
            return
        payload = encode(v, self._redact).SerializeToString()
        self._publish(payload, lambda s: s.wants(v))

    def session(self, v: SessionVerdict) -> None:
        """A session's verdict, to the subscribers that asked for sessions."""
        if not any(s.wants_session(v) for s in self._subs):
            return
        self._publish(encode_session(v, self._redact).SerializeToString(), lambda s: s.wants_session(v))

    def _publish(self, payload: bytes, wants: Callable[[_Subscriber], bool]) -> None:
        with self._lock:
            dropped = sum(not s.offer(payload) for s in self._subs if wants(s))
            self.dropped += dropped
        if dropped and self._dropped_metric is not None:
            self._dropped_metric.inc(dropped)

    def handler(self) -> grpc.GenericRpcHandler:
        """``VerdictService/Subscribe``, for ``grpc.Server.add_generic_rpc_handlers``."""
        # The response serializer is None: verdicts are serialized once in ``verdict``,
        # not once per subscriber. The request's is too: ``_subscribe`` parses it.
        subscribe = grpc.unary_stream_rpc_method_handler(
            self._subscribe, request_deserializer=None, response_serializer=None)
        return grpc.method_handlers_generic_handler(SERVICE, {"Subscribe": subscribe})

    def close(self) -> None:
        """End every stream once its queue is sent (status OK); refuse new ones. Safe twice."""
        with self._lock:
            self._closed = True
            subs, self._subs = self._subs, ()
        for s in subs:
            s.end(drain=True)

    def _subscribe(self, body: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
        try:
            request = pb.SubscribeRequest.FromString(body)
        except DecodeError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"not a SubscribeRequest: {e}")
        sub = _Subscriber(request, self.config.queue_size)
        with self._lock:
            if self._closed:
                refusal = (grpc.StatusCode.UNAVAILABLE, "verdict stream closed: the service is stopping")
            elif len(self._subs) >= self.config.max_subscribers:
                self.refused += 1
                refusal = (grpc.StatusCode.RESOURCE_EXHAUSTED,
                           f"verdict stream full: {self.config.max_subscribers} subscribers already; retry later")
            else:
                self._subs += (sub,)
                refusal = None
        if refusal is not None:
            context.abort(*refusal)
        # Runs however the RPC ends (cancel, deadline, server stop, normal end). It is what
        # wakes a handler blocked in ``take`` when its client goes away; False means the RPC
        # is already over and no callback will come.
        if not context.add_callback(lambda: self._leave(sub)):
            self._leave(sub)
        return self._deliver(sub)

    def _deliver(self, sub: _Subscriber) -> Iterator[bytes]:
        try:
            while (payload := sub.take()) is not None:
                yield payload
        finally:
            self._leave(sub)

    def _leave(self, sub: _Subscriber) -> None:
        """Unsubscribe and wake the stream's handler. Idempotent."""
        with self._lock:
            if sub in self._subs:
                self._subs = tuple(s for s in self._subs if s is not sub)
        sub.end(drain=False)
