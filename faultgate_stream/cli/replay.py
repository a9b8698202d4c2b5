"""``faultgate-stream replay FILE... --endpoint URL``: send trace files to a running
service over OTLP, with timestamps shifted to now so the runs complete live.

Retries are the transports' own: gRPC's retry policy (service config) and urllib3's
``Retry``, which honours ``Retry-After``; a refused request is retried, never dropped.
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest, ExportTraceServiceResponse,
)

from faultgate_stream.model.errors import InputError
from faultgate_stream.read import otlp_json, otlp_proto

DEFAULT_BATCH = 512
# How long replay waits for the endpoint to answer at all before saying nothing is there;
# a refusing (busy) server is retried far longer, by the transports' own retries below.
CONNECT_TIMEOUT = 5.0
_RETRY_CONFIG = json.dumps({"methodConfig": [{
    "name": [{"service": "opentelemetry.proto.collector.trace.v1.TraceService"}],
    "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.5s", "maxBackoff": "10s", "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE"]}}]})


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("traces", nargs="+", help="OTLP trace files (JSON or protobuf)")
    p.add_argument("--endpoint", default=None, help="grpc: host:port (default localhost:4317); "
                                                    "http: URL (default http://localhost:4318)")
    p.add_argument("--protocol", choices=("grpc", "http"), default="grpc")
    p.add_argument("--encoding", choices=("protobuf", "json"), default="protobuf", help="HTTP body encoding")
    p.add_argument("--rate", type=float, default=0.0, help="spans per second (default: as fast as accepted)")
    p.add_argument("--batch", type=int, default=DEFAULT_BATCH, help=f"spans per request (default {DEFAULT_BATCH})")
    p.add_argument("--no-shift", action="store_true", help="keep the files' timestamps")
    p.add_argument("--quiet", action="store_true", help="no progress display")


def load_request(path: str | Path) -> ExportTraceServiceRequest:
    data = Path(path).read_bytes()
    if data.lstrip()[:1] == b"{":
        try:
            doc = json.loads(data)
        except ValueError as e:
            raise InputError(f"{path}: not valid JSON ({e})") from None
        if isinstance(doc, dict):
            doc = otlp_json.json_names(doc, data)  # protobuf's field names, as the JSON mapping allows
        if not isinstance(doc, dict) or "resourceSpans" not in doc:
            raise InputError(f"{path}: replay sends OTLP files; check other formats with `faultgate-stream check`")
        request, _, _ = otlp_json.to_request(doc)
        return request
    return otlp_proto.parse(data)


def shift_to(request: ExportTraceServiceRequest, now_ns: int) -> None:
    """Move every timestamp by the same amount so the earliest span starts at ``now_ns``."""
    starts = [s.start_time_unix_nano for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans
              if s.start_time_unix_nano]
    if not starts:
        return
    delta = now_ns - min(starts)
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for s in ss.spans:
                if s.start_time_unix_nano:
                    s.start_time_unix_nano += delta
                if s.end_time_unix_nano:
                    s.end_time_unix_nano += delta
                for e in s.events:
                    if e.time_unix_nano:
                        e.time_unix_nano += delta


def batches(request: ExportTraceServiceRequest, size: int) -> Iterator[ExportTraceServiceRequest]:
    """Requests of at most ``size`` spans, each span keeping its resource and scope."""
    out, n = ExportTraceServiceRequest(), 0
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            i = 0
            while i < len(ss.spans):
                take = min(size - n, len(ss.spans) - i)
                rs_out = out.resource_spans.add(resource=rs.resource, schema_url=rs.schema_url)
                rs_out.scope_spans.add(scope=ss.scope, schema_url=ss.schema_url).spans.extend(ss.spans[i:i + take])
                n += take
                i += take
                if n == size:
                    yield out
                    out, n = ExportTraceServiceRequest(), 0
    if n:
        yield out


class NoEndpoint(ConnectionError):
    """Nothing accepted a connection at the endpoint."""


@dataclass
class Tally:
    spans: int = 0
    requests: int = 0
    rejected: int = 0
    first_problem: str = ""

    def add(self, sent: int, response: ExportTraceServiceResponse) -> None:
        self.spans += sent
        self.requests += 1
        if response.HasField("partial_success") and response.partial_success.rejected_spans:
            self.rejected += response.partial_success.rejected_spans
            self.first_problem = self.first_problem or response.partial_success.error_message


class GrpcSender:
    def __init__(self, endpoint: str) -> None:
        import grpc
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

        target = endpoint.removeprefix("grpc://").removeprefix("http://")
        self.target = target
        self._channel = grpc.insecure_channel(target, options=[("grpc.service_config", _RETRY_CONFIG),
                                                               ("grpc.enable_retries", 1)])
        self._stub = trace_service_pb2_grpc.TraceServiceStub(self._channel)

    def wait_ready(self, timeout: float = CONNECT_TIMEOUT) -> None:
        """Raise ``NoEndpoint`` when nothing accepts a connection within ``timeout``."""
        import grpc

        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            raise NoEndpoint(f"nothing answers OTLP/gRPC at {self.target} within {timeout:g}s") from None

    def send(self, request: ExportTraceServiceRequest) -> ExportTraceServiceResponse:
        return self._stub.Export(request, timeout=30)

    def close(self) -> None:
        self._channel.close()


class HttpSender:
    def __init__(self, endpoint: str, encoding: str) -> None:
        import urllib3

        url = urlparse(endpoint if "://" in endpoint else f"http://{endpoint}")
        self._url = url._replace(path=url.path if url.path not in ("", "/") else "/v1/traces").geturl()
        self._json = encoding == "json"
        # connect=1: a refused connection means nothing listens, which retrying for a minute
        # would not change; 429/503 (a busy server) keep their full retries.
        retry = urllib3.Retry(total=8, connect=1, backoff_factor=0.5, status_forcelist=(429, 502, 503, 504),
                              allowed_methods=None, respect_retry_after_header=True, raise_on_status=True)
        self._http = urllib3.PoolManager(retries=retry)

    def send(self, request: ExportTraceServiceRequest) -> ExportTraceServiceResponse:
        from google.protobuf import json_format

        if self._json:
            body, ctype = json_format.MessageToJson(request, indent=None).encode(), "application/json"
            body = _hex_ids(body)
        else:
            body, ctype = request.SerializeToString(), "application/x-protobuf"
        r = self._http.request("POST", self._url, body=gzip.compress(body),
                               headers={"Content-Type": ctype, "Content-Encoding": "gzip"}, timeout=30)
        if r.status != 200:
            raise InputError(f"{self._url} answered {r.status}: {r.data[:300]!r}")
        response = ExportTraceServiceResponse()
        if self._json:
            json_format.Parse(r.data or b"{}", response, ignore_unknown_fields=True)
        else:
            response.ParseFromString(r.data)
        return response

    def close(self) -> None:
        self._http.clear()


def _hex_ids(body: bytes) -> bytes:
    """OTLP/JSON writes ids in hex; the proto3 JSON mapping writes base64."""
    import base64

    doc = json.loads(body)
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for s in ss.get("spans", []):
                for k in ("traceId", "spanId", "parentSpanId"):
                    if s.get(k):
                        s[k] = base64.b64decode(s[k]).hex()
    return json.dumps(doc).encode()


def replay(paths: list[str], sender, *, rate: float = 0.0, batch: int = DEFAULT_BATCH, shift: bool = True,
           progress=None) -> Tally:
    requests = [load_request(p) for p in paths]
    total = sum(len(ss.spans) for r in requests for rs in r.resource_spans for ss in rs.scope_spans)
    now = time.time_ns()
    tally = Tally()
    started = time.monotonic()
    for r in requests:
        if shift:
            shift_to(r, now)
        for chunk in batches(r, batch):
            n = sum(len(ss.spans) for rs in chunk.resource_spans for ss in rs.scope_spans)
            if rate > 0:
                wait = started + tally.spans / rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            tally.add(n, sender.send(chunk))
            if progress:
                progress(tally, total)
    return tally


def _plain(e: Exception) -> str:
    """One line for a transport error: gRPC's status and details, urllib3's last cause."""
    code, details = getattr(e, "code", None), getattr(e, "details", None)
    if callable(code) and callable(details):
        return f"{code().name}: {details()}"
    reason = getattr(e, "reason", None)  # urllib3's MaxRetryError carries the last error here
    if reason is not None:
        return f"{type(reason).__name__}: {reason}"
    return f"{type(e).__name__}: {e}"


def _progress(tally: Tally, total: int) -> None:
    pct = 100 * tally.spans / total if total else 100
    sys.stderr.write(f"\rreplay: {tally.spans}/{total} spans ({pct:.0f}%) · {tally.requests} requests · "
                     f"{tally.rejected} rejected")
    sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    endpoint = args.endpoint or ("localhost:4317" if args.protocol == "grpc" else "http://localhost:4318")
    sender = GrpcSender(endpoint) if args.protocol == "grpc" else HttpSender(endpoint, args.encoding)
    try:
        if isinstance(sender, GrpcSender):
            sender.wait_ready()
        tally = replay(args.traces, sender, rate=args.rate, batch=args.batch, shift=not args.no_shift,
                       progress=None if args.quiet else _progress)
    except InputError as e:
        print(f"\nfaultgate-stream: {e}", file=sys.stderr)
        return 2
    except NoEndpoint as e:
        print(f"faultgate-stream: {e}; is `faultgate-stream serve` (or a collector) running there? "
              "--endpoint names another", file=sys.stderr)
        return 1
    except Exception as e:  # a transport error after its retries: say which, without a traceback
        print(f"\nfaultgate-stream: replay to {endpoint} failed: {_plain(e)}", file=sys.stderr)
        return 1
    finally:
        sender.close()
    if not args.quiet:
        sys.stderr.write("\n")
    print(f"replayed {tally.spans} spans in {tally.requests} requests to {endpoint} ({args.protocol}); "
          f"{tally.rejected} rejected" + (f": {tally.first_problem}" if tally.first_problem else ""))
    return 0
