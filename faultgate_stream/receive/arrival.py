"""A bound on the time a gRPC request may take to arrive.

The sync ``grpc.server`` hands a call to a worker thread as soon as its HEADERS arrive;
the worker then waits, without a deadline of its own, for the request message. A sender
that opens calls and never finishes their DATA (68 of them were enough) holds every
worker, and every other client times out. So every handler that reads one request is
served as a request-streaming handler: the worker reads the message itself, and a
watchdog cancels the call when the message has not arrived within ``timeout`` seconds,
which frees the worker. ``grpc.max_concurrent_streams`` (set by the receiver) keeps one
connection from taking every worker in the meantime.
"""
from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc


class ArrivalWatchdog:
    """Cancels calls whose request has not arrived by their deadline. One thread for all
    calls; a call costs a heap push and a flag."""

    def __init__(self, timeout: float, on_timeout: Callable[[], None]) -> None:
        self.timeout = timeout
        self._on_timeout = on_timeout
        self._heap: list[tuple[float, int, list[Any]]] = []
        self._seq = itertools.count()
        self._cv = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="grpc-arrival", daemon=True)
        self._thread.start()

    def watch(self, context: grpc.ServicerContext) -> list[Any]:
        """A ticket; ``done(ticket)`` once the request has arrived."""
        ticket = [context]
        with self._cv:
            heapq.heappush(self._heap, (time.monotonic() + self.timeout, next(self._seq), ticket))
            if len(self._heap) == 1:
                self._cv.notify()
        return ticket

    @staticmethod
    def done(ticket: list[Any]) -> None:
        ticket[0] = None  # the watchdog skips it; popped when its deadline comes

    def stop(self) -> None:
        with self._cv:
            self._stopped = True
            self._cv.notify()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            late: list[grpc.ServicerContext] = []
            with self._cv:
                if self._stopped:
                    return
                now = time.monotonic()
                while self._heap and self._heap[0][0] <= now:
                    context = heapq.heappop(self._heap)[2][0]
                    if context is not None:
                        late.append(context)
                if not late:
                    self._cv.wait(self._heap[0][0] - now if self._heap else None)
                    continue
            for context in late:
                context.cancel()
                self._on_timeout()


class ArrivalDeadline(grpc.ServerInterceptor):
    """Serves each single-request handler as request-streaming, reading its one request
    under the watchdog. Put it first, so the handlers other interceptors return (a denial
    of a missing token, say) are bounded too."""

    def __init__(self, watchdog: ArrivalWatchdog) -> None:
        self._w = watchdog

    def intercept_service(self, continuation: Callable[[Any], Any], details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None or handler.request_streaming:
            return handler
        first = self._first
        if handler.response_streaming:
            inner_stream = handler.unary_stream

            def streaming(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
                yield from inner_stream(first(requests, context), context)

            return grpc.stream_stream_rpc_method_handler(streaming, request_deserializer=handler.request_deserializer,
                                                         response_serializer=handler.response_serializer)
        inner_unary = handler.unary_unary

        def unary(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
            return inner_unary(first(requests, context), context)

        return grpc.stream_unary_rpc_method_handler(unary, request_deserializer=handler.request_deserializer,
                                                    response_serializer=handler.response_serializer)

    def _first(self, requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
        ticket = self._w.watch(context)
        try:
            request = next(requests, None)
        except grpc.RpcError:
            request = None  # cancelled by the watchdog or by the client
        finally:
            self._w.done(ticket)
        if request is None:
            context.abort(grpc.StatusCode.CANCELLED,
                          f"the request did not arrive within {self._w.timeout:g}s")
        return request
