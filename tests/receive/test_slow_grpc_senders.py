"""gRPC calls that never finish arriving (HEADERS and part of the DATA, then silence) must
not take the workers other clients need: a connection holds at most
``grpc_max_streams_per_connection`` calls, and a call whose message has not arrived within
``request_timeout`` is cancelled, which frees its worker.

The half-open calls come from a raw HTTP/2 client (``h2`` over a socket), the way a slow or
hostile sender writes them; the client that must still be served is a real grpc stub.
"""
from __future__ import annotations

import dataclasses
import socket
import subprocess
import sys
import threading
import time

import grpc
import h2.config
import h2.connection
import h2.events
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from faultgate_stream.export.stream.config import StreamConfig
from tests.live.test_receivers import _request, _span
from tests.live_service import make_config

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


class HalfOpenCalls:
    """One HTTP/2 connection carrying ``n`` Export calls, each announcing a 1000-byte
    message and sending 70 bytes of it. The server's SETTINGS are not read first, so the
    client sends past any stream limit the server sets, as a hostile client would."""

    def __init__(self, port: int, n: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
        self.conn.initiate_connection()
        self.streams = []
        for _ in range(n):
            sid = self.conn.get_next_available_stream_id()
            self.conn.send_headers(sid, [(":method", "POST"), (":scheme", "http"), (":path", EXPORT),
                                         (":authority", f"127.0.0.1:{port}"), ("content-type", "application/grpc"),
                                         ("te", "trailers")])
            self.conn.send_data(sid, b"\x00" + (1000).to_bytes(4, "big") + b"\x0a" * 70)
            self.streams.append(sid)
        self.sock.sendall(self.conn.data_to_send())

    def ended(self) -> set[int]:
        """Streams the server has ended so far (reset, or answered with trailers)."""
        out: set[int] = set()
        self.sock.settimeout(0.2)
        while True:
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                break
            if not data:
                break
            for ev in self.conn.receive_data(data):
                if isinstance(ev, (h2.events.StreamReset, h2.events.StreamEnded)):
                    out.add(ev.stream_id)
            pending = self.conn.data_to_send()
            if pending:
                self.sock.sendall(pending)
        return out

    def close(self) -> None:
        self.sock.close()


def _export(target: str) -> grpc.StatusCode:
    with grpc.insecure_channel(target) as channel:
        try:
            trace_service_pb2_grpc.TraceServiceStub(channel).Export(_request(_span(7, 1)), timeout=30)
            return grpc.StatusCode.OK
        except grpc.RpcError as e:
            return e.code()


def _config(**receive: object):
    base = make_config()
    # 2 + 1 = 3 workers in the pool, so a few half-open calls would take them all
    return dataclasses.replace(base, receive=dataclasses.replace(base.receive, grpc_workers=2, **receive),
                               stream=StreamConfig(max_subscribers=1))


def test_68_half_open_calls_on_one_connection_leave_workers_for_other_clients(live_service):
    live = live_service(_config(grpc_max_streams_per_connection=2, request_timeout=600.0))
    slow = HalfOpenCalls(live.service.ports["grpc"], 68)
    try:
        assert _export(live.grpc) == grpc.StatusCode.OK
        # the server refused the calls past its per-connection limit instead of queueing them
        refused = {ev for ev in slow.ended()}
        assert len(refused) >= 68 - 2, refused
    finally:
        slow.close()


def test_half_open_calls_across_connections_are_cancelled_after_the_request_timeout(live_service):
    live = live_service(_config(grpc_max_streams_per_connection=2, request_timeout=1.0))
    port = live.service.ports["grpc"]
    slow = [HalfOpenCalls(port, 2) for _ in range(3)]  # 6 calls for 3 workers
    try:
        # served only once the watchdog has cancelled the calls that held the workers
        assert _export(live.grpc) == grpc.StatusCode.OK
        # The export may find a worker before the half-open calls took theirs (CI saw it):
        # their cancellation then comes request_timeout later, so it is waited for, bounded.
        ended: list[set[int]] = [set() for _ in slow]
        deadline = time.monotonic() + 15
        while sum(len(e) for e in ended) < 3 and time.monotonic() < deadline:
            for seen, c in zip(ended, slow):
                seen |= c.ended()
        assert sum(len(e) for e in ended) >= 3, ended
        assert live.sample("faultgate_receiver_rejected_requests_total", transport="grpc",
                           reason="request_timeout") >= 3
    finally:
        for c in slow:
            c.close()


# A sender in its own process: it keeps ``inflight`` calls open over one connection, each
# started as soon as the one before it was answered, and prints how many failed and how.
_BURST_CLIENT = """
import asyncio, sys, grpc
async def main(target, method, path, inflight, calls):
    body = open(path, "rb").read()
    failed = []
    async with grpc.aio.insecure_channel(target) as ch:
        call = ch.unary_unary(method, request_serializer=None, response_deserializer=None)
        async def sender():
            for _ in range(calls):
                try:
                    await call(body, timeout=30)
                except grpc.aio.AioRpcError as e:
                    failed.append(f"{e.code().name}: {e.details()}")
        await asyncio.gather(*[sender() for _ in range(inflight)])
    print(len(failed), failed[:1])
asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])))
"""


def test_answered_calls_stop_counting_against_the_stream_limit_while_the_service_is_busy(live_service, tmp_path):
    """A call that was answered no longer counts against the connection's stream limit,
    even before Python has let go of it. gRPC's default ("overload protection") counted a
    stream until its call object was freed, which takes the gRPC poller thread, which
    takes the GIL: while a completion scan or a collection held the GIL, a sender's next
    calls were refused (RST_STREAM REFUSED_STREAM, UNAVAILABLE to the sender) before any
    handler of ours saw them, so no metric of ours counted them (bench/live.py saw it at the
    start of most windows at 100k spans/s). Here a thread of the service's own process holds
    the GIL in short C-level stretches (a sort), as scans do, and a sender keeps as many calls
    open as the limit allows: on the old setting it had hundreds of its 600 calls refused."""
    live = live_service(_config(grpc_max_streams_per_connection=2))
    body = tmp_path / "request.bin"
    body.write_bytes(_request(_span(9, 1)).SerializeToString())
    stop = threading.Event()
    unsorted = list(range(2_000_000, 0, -1))

    def hold_the_gil() -> None:
        while not stop.is_set():
            sorted(unsorted)  # ~30 ms in C without a GIL hand-off
            time.sleep(0.001)

    holder = threading.Thread(target=hold_the_gil, daemon=True)
    holder.start()
    try:
        out = subprocess.run([sys.executable, "-c", _BURST_CLIENT, live.grpc, EXPORT, str(body), "2", "300"],
                             capture_output=True, text=True, timeout=120)
    finally:
        stop.set()
        holder.join(timeout=5)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[0] == "0", f"calls refused before the handler: {out.stdout}"
    # every call reached the handler: one span each, the first accepted, the rest duplicates of it
    assert live.sample("faultgate_receiver_accepted_spans_total", transport="grpc") == 600
