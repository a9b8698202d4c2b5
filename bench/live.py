"""Live benchmark: the running service's OTLP/gRPC throughput, against a null receiver, same run.

    .venv/bin/python bench/live.py [--rounds N] [--seconds S] [--warmup W] [--inflight K]
    .venv/bin/python bench/live.py --profile S [--profile-export]   # where the service's time goes
    .venv/bin/python bench/live.py --instructions 30                # instructions a span, live (callgrind)

Three servers, each its own process pinned to CPU 0 (see bench/README.md for the output):

- ``null``: a sync ``grpc.server`` with a raw-bytes handler that only parses the request
  (``ExportTraceServiceRequest.FromString``) and answers ``b""``: the ceiling of a Python
  OTLP/gRPC receiver on this machine (python-otlp-performance.md measured ~1.0 M spans/s).
  It is this file, started with ``--null-server PORT``.
- ``service``: ``faultgate-stream serve`` with the default checks and no export.
- ``export``: the same service passing every span on to a second null receiver, which runs
  on CPU 1 beside the load generator, so that CPU 0 carries the service alone.
- ``wal`` (``--wal``): the export-on service with the write-ahead log on
  (``durability.wal``, ``fsync: batch``, in the bench's temporary folder on this disk): every
  request durable before it is acknowledged. Printed beside it: its throughput over
  export-on's, round by round, and the p99 of its fsyncs over each window (the service's
  ``faultgate_wal_fsync_seconds``).
- ``tail_samp`` and ``groupbyt`` (the peers): the collector build the tests use
  (``scripts/install_peers.sh``), ``GOMAXPROCS=1`` on CPU 0, with ``tail_sampling`` (three
  policies, every trace sampled) or ``groupbytrace``, exporting every span to the same
  downstream null receiver as ``export``: the collector's own per-core cost for holding
  traces until they are complete. Left out with ``--no-peers`` or when no such build exists.

The load generator is this process, pinned to CPU 1: pre-encoded requests of 16-span agent
runs, 512 spans per request, 8 calls in flight over one raw ``grpc.aio`` channel with
identity serializers, the workload of the reference. Every request carries fresh trace ids
(patched into the pre-encoded bytes), so the service decides every run and drops nothing as
a duplicate. The configurations are interleaved in rounds (null, service, export, null, ...)
so that noise on this shared machine falls on all three, and the figures are medians; the
headline numbers are ratios measured in this run.

After each service window the bench waits until the service has decided every run it was
sent (``faultgate_runs_total`` = accepted spans / 16) and, with export, until every span went
downstream, so the throughput printed is of work done, not of work queued.

The last line is ``RESULT live_spans_per_s=<int> vs_null=<x.xx> export_cost=<x.xx>``, then
``vs_tail_sampling=<x.xx> vs_groupbytrace=<x.xx>`` (export-on throughput / the peer's, per
round, median) when the peers ran, and ``wal_cost=<x.xx> wal_fsync_p99_ms=<x.x>`` (WAL-on
throughput / export-on's, per round, median; the fsync p99 over the WAL's windows) with
``--wal``. Exit
code: 0 when every check of the work done passed, 1 when one did not (refused spans,
undecided runs, spans not exported), 2 when a server did not start. Speed never sets it.

Standard library plus the project's own dependencies (grpcio, opentelemetry-proto).
"""
from __future__ import annotations

import argparse
import asyncio
import ctypes
import ctypes.util
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
SERVICE_NAME = "opentelemetry.proto.collector.trace.v1.TraceService"
SPANS_PER_RUN = 16            # 1 invoke_agent + 5 chat + 10 execute_tool, as in the reference
SERVER_CPU, CLIENT_CPU = 0, 1
MAX_MESSAGE = 64 * 1024 * 1024
# The reference's malloc setting: without it every ~290 KB request mmaps and unmaps its
# buffers, which halves parse throughput and makes runs bimodal (335 k or 776 k spans/s).
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "16777216", "MALLOC_TRIM_THRESHOLD_": "134217728"}
START_TIMEOUT_S = 30.0        # a server that has not said where it listens by then has failed
DRAIN_TIMEOUT_S = 30.0        # runs still undecided this long after the load stopped: a finding
CALL_TIMEOUT_S = 10.0
SCRAPE_TIMEOUT_S = 30.0
POLL_S = 0.05                 # how often start-up and drain are polled
CLK_TCK = os.sysconf("SC_CLK_TCK")


def die(message: str, code: int = 2) -> NoReturn:
    print(f"bench/live.py: {message}", file=sys.stderr, flush=True)
    raise SystemExit(code)


def tune_malloc() -> None:
    """The same thresholds as MALLOC_ENV, set in this (already running) process through
    mallopt: the load generator builds a ~290 KB request per call and should not be the
    one that page-faults. M_TRIM_THRESHOLD = -1, M_MMAP_THRESHOLD = -3 (glibc's malloc.h)."""
    name = ctypes.util.find_library("c")
    if not name:
        return
    libc = ctypes.CDLL(name)
    if hasattr(libc, "mallopt"):
        libc.mallopt(-3, 16 * 1024 * 1024)
        libc.mallopt(-1, 128 * 1024 * 1024)


# --------------------------------------------------------------------------- null receiver
# Runs in its own process (``--null-server PORT``). It is the reference's "py raw" receiver:
# the fastest Python shape measured, so the service's ratio against it is the cost of the
# service's own work above a receiver that does nothing but parse.

def null_server(port: int) -> int:
    from concurrent import futures

    import grpc
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    def export(body: bytes, context: object) -> bytes:
        ExportTraceServiceRequest.FromString(body)  # parse, as any receiver must
        return b""  # an empty ExportTraceServiceResponse: everything accepted

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                         options=[("grpc.max_receive_message_length", MAX_MESSAGE), ("grpc.so_reuseport", 0)])
    handler = grpc.unary_unary_rpc_method_handler(export, request_deserializer=None, response_serializer=None)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, {"Export": handler}),))
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    if not bound:
        print(f"cannot listen on 127.0.0.1:{port}", file=sys.stderr, flush=True)
        return 2
    server.start()
    signal.signal(signal.SIGTERM, lambda *_: server.stop(0))
    print(json.dumps({"event": "started", "endpoints": {"grpc": bound}}), flush=True)
    server.wait_for_termination()
    return 0


# --------------------------------------------------------------------------- profiled service
# ``python -m cProfile`` sees only the main thread, and the service's main thread only waits
# for SIGTERM: the work happens in gRPC worker threads and the assembler's ticker. So this
# mode wraps Thread.run to give every thread its own profiler, runs ``serve``, and merges.

def profiled_serve(config: str, out: str) -> int:
    import cProfile
    import pstats
    import threading

    profilers: list[cProfile.Profile] = []
    original_run = threading.Thread.run

    def run(self: threading.Thread) -> None:
        # the default wall-clock timer: time.thread_time would leave out GIL waits, but it
        # is a system call per event here (10x overhead, shares skewed towards small
        # functions); --profile drives one call at a time instead, so threads rarely wait
        prof = cProfile.Profile()
        profilers.append(prof)
        prof.enable()
        try:
            original_run(self)
        finally:
            prof.disable()

    threading.Thread.run = run  # type: ignore[method-assign]
    from faultgate_stream.cli.main import main

    rc = main(["serve", "--config", config])
    # serve returned after its shutdown: worker threads are gone or idle, blocked in C, so
    # reading their profilers from here races with nothing.
    stats: pstats.Stats | None = None
    for prof in list(profilers):
        try:
            stats = pstats.Stats(prof) if stats is None else stats.add(prof)
        except TypeError:  # a thread that never made a call: nothing recorded
            continue
    if stats is not None:
        stats.dump_stats(out)
    sys.stdout.flush()
    os._exit(rc)  # idle pool threads would otherwise keep the process alive


# --------------------------------------------------------------------------- workload

def _attr(span, key: str, value) -> None:
    kv = span.attributes.add(key=key)
    if isinstance(value, bool):
        kv.value.bool_value = value
    elif isinstance(value, int):
        kv.value.int_value = value
    elif isinstance(value, float):
        kv.value.double_value = value
    elif isinstance(value, list):
        for v in value:
            kv.value.array_value.values.add().string_value = v
    else:
        kv.value.string_value = value


def _pad_json(obj: dict | list, key_path: tuple, size: int) -> str:
    """``obj`` as JSON of exactly ``size`` characters, by padding the string at key_path:
    the reference's workload fixes the sizes of messages, arguments and results."""
    text = json.dumps(obj, separators=(",", ":"))
    short = size - len(text)
    if short > 0:
        node = obj
        for k in key_path[:-1]:
            node = node[k]
        filler = " ".join(["lorem", "ipsum", "dolor", "sit", "amet"] * (short // 5 + 1))[:short]
        node[key_path[-1]] += filler
        text = json.dumps(obj, separators=(",", ":"))
    return text


TOOLS = ("search_docs", "fetch_url", "lookup_order", "get_weather", "calculator")


def build_template(runs: int, rng: random.Random) -> tuple[bytes, list[int], int]:
    """One ExportTraceServiceRequest of ``runs`` agent runs, serialized once, and the byte
    offsets of the first 8 bytes of every span's trace id, where each request gets a fresh
    sequence number: re-encoding 512 spans per call would make the load generator, not the
    server, the thing measured."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    _attr(rs.resource, "service.name", "bench-agent")
    ss = rs.scope_spans.add()
    ss.scope.name = "bench.live"
    # bytes 0-7 of a trace id: a placeholder that each request overwrites with its sequence
    # number; bytes 8-15: a marker that cannot occur elsewhere, then the run's index
    placeholder = rng.getrandbits(64).to_bytes(8, "big")
    marker = rng.getrandbits(32).to_bytes(4, "big")
    base_ns = time.time_ns()
    trace_ids = []
    for r in range(runs):
        tid = placeholder + marker + r.to_bytes(4, "big")
        trace_ids.append(tid)
        t0 = base_ns + r * 1_000_000
        root_id = (r * 64 + 1).to_bytes(8, "big")
        children = []
        step = 0
        for c in range(5):  # chat, tool, tool; five times: 5 chat + 10 tool spans
            chat = Span(trace_id=tid, span_id=(r * 64 + 2 + step).to_bytes(8, "big"), parent_span_id=root_id,
                        name="chat gpt-4o", kind=Span.SPAN_KIND_CLIENT,
                        start_time_unix_nano=t0 + step * 10_000_000, end_time_unix_nano=t0 + step * 10_000_000 + 9_000_000)
            for k, v in (("gen_ai.operation.name", "chat"), ("gen_ai.provider.name", "openai"),
                         ("gen_ai.request.model", "gpt-4o"), ("gen_ai.response.model", "gpt-4o-2024-08-06"),
                         ("gen_ai.response.id", f"chatcmpl-{r:04d}{c:02d}{rng.getrandbits(48):012x}"),
                         ("gen_ai.response.finish_reasons", ["tool_calls"]),
                         ("gen_ai.usage.input_tokens", 900 + 137 * c), ("gen_ai.usage.output_tokens", 40 + 7 * c),
                         ("gen_ai.request.temperature", 0.2), ("gen_ai.request.max_tokens", 1024)):
                _attr(chat, k, v)
            children.append(chat)
            step += 1
            for t in range(2):
                i = c * 2 + t
                name = TOOLS[(r + i) % len(TOOLS)]
                # distinct arguments per step: identical calls would make repeated_call fire
                # on every run, which is not what a typical run looks like
                args = _pad_json({"query": f"order {r}-{i} status", "limit": 5}, ("query",), 60)
                result = _pad_json({"ok": True, "items": [{"id": f"{r}-{i}", "text": "found "}]},
                                   ("items", 0, "text"), 200)
                error = rng.random() < 0.05  # the reference: 5% of tool spans fail
                tool = Span(trace_id=tid, span_id=(r * 64 + 2 + step).to_bytes(8, "big"), parent_span_id=root_id,
                            name=f"execute_tool {name}", kind=Span.SPAN_KIND_INTERNAL,
                            start_time_unix_nano=t0 + step * 10_000_000,
                            end_time_unix_nano=t0 + step * 10_000_000 + 5_000_000,
                            status=Status(code=Status.STATUS_CODE_ERROR, message="tool timed out") if error else None)
                for k, v in (("gen_ai.operation.name", "execute_tool"), ("gen_ai.tool.name", name),
                             ("gen_ai.tool.call.arguments", args), ("gen_ai.tool.call.result", result),
                             ("gen_ai.tool.call.id", f"call_{r:04d}_{i:02d}"), ("gen_ai.tool.type", "function")):
                    _attr(tool, k, v)
                children.append(tool)
                step += 1
        root = Span(trace_id=tid, span_id=root_id, name="invoke_agent support-agent", kind=Span.SPAN_KIND_INTERNAL,
                    start_time_unix_nano=t0, end_time_unix_nano=t0 + (step + 1) * 10_000_000)
        question = _pad_json([{"role": "user", "parts": [{"type": "text", "content": f"Where is my order {r}? "}]}],
                             (0, "parts", 0, "content"), 300)
        answer = _pad_json([{"role": "assistant", "parts": [{"type": "text", "content": f"Order {r} ships today. "}],
                             "finish_reason": "stop"}], (0, "parts", 0, "content"), 200)
        for k, v in (("gen_ai.operation.name", "invoke_agent"), ("gen_ai.agent.name", "support-agent"),
                     ("gen_ai.agent.id", f"support-agent-{r % 4}"), ("gen_ai.conversation.id", f"conv-{r:06d}"),
                     ("gen_ai.provider.name", "openai"), ("gen_ai.request.model", "gpt-4o"),
                     ("gen_ai.input.messages", question), ("gen_ai.output.messages", answer),
                     ("gen_ai.usage.input_tokens", 5400), ("gen_ai.usage.output_tokens", 310)):
            _attr(root, k, v)
        # an SDK exports spans as they end: the root, which ends last, comes last
        ss.spans.extend(children + [root])
    body = req.SerializeToString()
    offsets = []
    for tid in trace_ids:
        start = 0
        while (at := body.find(tid, start)) >= 0:
            offsets.append(at)
            start = at + 1
    if len(offsets) != runs * SPANS_PER_RUN:
        die(f"workload: found {len(offsets)} trace ids in the template, expected {runs * SPANS_PER_RUN}")
    return body, offsets, runs * SPANS_PER_RUN


class Requests:
    """Request bodies with fresh trace ids: the template's pieces between the 8-byte slots,
    joined with the request's sequence number (one C call, ~25 us for 512 spans)."""

    def __init__(self, template: bytes, offsets: list[int], first_seq: int) -> None:
        self._pieces = []
        prev = 0
        for at in sorted(offsets):
            self._pieces.append(template[prev:at])
            prev = at + 8
        self._pieces.append(template[prev:])
        self._seq = first_seq

    def next(self) -> bytes:
        self._seq += 1
        return self._seq.to_bytes(8, "big").join(self._pieces)


# --------------------------------------------------------------------------- processes

def cpu_seconds(pid: int) -> float:
    """user + system time of every thread of ``pid``: fields 14 and 15 of /proc/<pid>/stat
    (psutil is not a dependency). The command name (field 2) may hold spaces: split after it."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def stolen_seconds(core: int | None) -> float:
    """CPU time the hypervisor gave to other guests ("steal", /proc/stat field 8) on
    ``core`` (all cores together when None). A window that ran slow while steal rose
    was the machine, not the service: this VM's speed changes by half between hours."""
    line = f"cpu{'' if core is None else core} "
    try:
        with open("/proc/stat", "rb") as f:
            for raw in f:
                if raw.startswith(line.encode()):
                    fields = raw.split()
                    return int(fields[8]) / CLK_TCK if len(fields) > 8 else 0.0
    except OSError:
        pass
    return 0.0


@dataclass
class Child:
    name: str
    proc: subprocess.Popen
    log: Path
    ports: dict[str, int] = field(default_factory=dict)
    core: int | None = None   # the CPU it is pinned to

    @property
    def pid(self) -> int:
        return self.proc.pid

    def cpu(self) -> float:
        return cpu_seconds(self.pid)

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no output)"


def _child_setup(cpu: int | None):
    def setup() -> None:
        # runs between fork and exec; the driver has started no thread yet (gRPC is used
        # only once every child is up), so this is safe despite preexec_fn's caveat
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})  # what `taskset -c <cpu>` does
        name = ctypes.util.find_library("c")
        if name:  # PR_SET_PDEATHSIG = 1: the child dies with the bench even on SIGKILL
            ctypes.CDLL(name).prctl(1, signal.SIGKILL)
    return setup


def spawn(name: str, argv: list[str], workdir: Path, cpu: int | None) -> Child:
    log = workdir / f"{name}.log"
    env = {**os.environ, **MALLOC_ENV, "PYTHONUNBUFFERED": "1"}
    with open(log, "wb") as out:  # a file, not a pipe: nobody has to drain it during the load
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                cwd=workdir, preexec_fn=_child_setup(cpu))
    return Child(name, proc, log, core=cpu)


def spawn_null(name: str, workdir: Path, cpu: int | None) -> Child:
    """A null receiver (this file's ``--null-server`` mode) on a port the kernel picks."""
    return spawn(name, [sys.executable, str(Path(__file__).resolve()), "--null-server", "0"], workdir, cpu)


def wait_started(child: Child, timeout: float = START_TIMEOUT_S) -> None:
    """Wait for the child's ``started`` JSON line (the service's own log line, which names
    the ports it bound; the null receiver prints the same shape)."""
    deadline = time.monotonic() + timeout
    for _ in range(int(timeout / POLL_S) + 1):
        if time.monotonic() > deadline:
            break
        if child.proc.poll() is not None:
            die(f"{child.name} exited with code {child.proc.returncode} before it started; its output:\n"
                f"{child.tail()}")
        try:
            text = child.log.read_text(errors="replace")
        except OSError:
            text = ""
        for line in text.splitlines():
            if '"started"' not in line:
                continue
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if doc.get("event") == "started":
                child.ports = {k: int(v) for k, v in doc["endpoints"].items()}
                return
        time.sleep(POLL_S)
    die(f"{child.name} did not start within {timeout:.0f}s; its output:\n{child.tail()}")


def stop(children: list[Child], timeout: float = 10.0) -> None:
    """SIGTERM (the service then refuses, decides runs as shutdown and exits), SIGKILL after
    a bounded wait: children never outlive the bench."""
    for c in children:
        if c.proc.poll() is None:
            c.proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for c in children:
        try:
            c.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            c.proc.kill()
            c.proc.wait(timeout=5)


# ``--extra-checks``: the same service with issue 13's checks on, each its own process in the
# same rounds. ``bound`` holds every run to a per-run policy through a binding (what any
# policy file costs live); ``window`` adds windowed budgets to that policy (per session,
# and a running total per session and query: the workload's runs share 32 conversation ids
# and fixed span times, so each key fills to checks.windows.max_events_per_key, a hot
# key's worst case); ``loop`` is the default rules plus ``loop``.
EXTRA_CHECKS = {
    "loop": ("checks:\n  enabled: [search_loop, abstention, policy, repeated_call, unrecovered_tool_error, "
             "context_overflow, loop]\n", None),
    "bound": ("", "max_calls: 100000\n"),
    "window": ("", "max_calls: [{max: 100000, within: 10m, per: session}]\n"
               "limits: [{tool: lookup_order, arg: limit, sum: true, max: 1000000000000, within: 24h, per: session, "
               "by: query}]\n"),
}


# ... and issue 33's checks of one's own: ``plugin`` is the default rules plus a plug-in that
# does nothing (what any plug-in costs before its own work: the run's view, the hand-over to
# the plug-ins' thread, the budget's clock), ``rules`` the default rules plus the five CEL
# rules below, each looking at spans or runs the workload has (three span rules, two with
# ``tools``, and two run rules).
EXTRA_CHECKS["plugin"] = ("checks:\n  plugins: [\"bench_plugins:Noop\"]\n", None)
EXTRA_CHECKS["rules"] = ("checks:\n  rules: bench_rules.yaml\n", None)
OWN_CHECKS = ("plugin", "rules")
NOOP_PLUGIN = '''from faultgate_stream.checks import api


class Noop(api.Check):
    name = "noop"

    def finish(self, state, run):
        return api.passed()
'''
FIVE_RULES = '''- name: fetch_big_limit
  tools: [fetch_url]
  when: 'span.args.limit > 100'
- name: query_drop
  tools: [lookup_order]
  when: 'span.args.query.matches("(?i)drop\\\\s+table")'
- name: calculator_failed
  when: 'span.status == "error" && span.tool == "calculator"'
- name: search_spree
  level: run
  when: '"search_docs" in run.calls && run.calls["search_docs"] > 5'
- name: many_failures
  level: run
  when: 'run.steps.filter(s, !s.ok).size() > 3'
'''


def extra_config(workdir: Path, name: str) -> list[str]:
    checks, policy = EXTRA_CHECKS[name]
    if name == "plugin":
        (workdir / "bench_plugins.py").write_text(NOOP_PLUGIN)  # imported from the service's cwd
    elif name == "rules":
        (workdir / "bench_rules.yaml").write_text(FIVE_RULES)
    if policy is None:
        return checks.splitlines()
    path = workdir / f"{name}-policy.yaml"
    path.write_text(policy)
    return ["checks:", "  bindings:", f'    - {{agents: ["*"], policy: "{path}"}}']


# How the service and the peers compress what they send downstream: the same for both, so
# the ratio compares holding traces, not zlib (gzip would add ~8 CPU us a span to ours and
# nothing to theirs). The collector's own default is gzip; "none" is what the peers ran
# with when the reference figures were taken.
DOWNSTREAM_COMPRESSION = "none"


def service_config(workdir: Path, name: str, export_port: int | None, extra: list[str] | None = None) -> Path:
    # Port 0 everywhere: the kernel picks free loopback ports and the service names them in
    # its "started" log line, so two benches (or a test run) never collide.
    lines = [
        "receive:",
        '  grpc_endpoint: "127.0.0.1:0"',
        '  http_endpoint: ""              # unused here',
        "assemble:",
        "  root_grace: 0.5s               # runs complete soon after the load stops",
        "metrics:",
        '  endpoint: "127.0.0.1:0"',
        "log:",
        "  verdicts: false                # a JSON line per run would measure stdout",
        "shutdown_grace: 2s",
    ]
    if export_port is not None:
        lines += ["export:", f'  endpoint: "127.0.0.1:{export_port}"', "  tls: {insecure: true}",
                  f"  compression: {DOWNSTREAM_COMPRESSION}"]
    lines += extra or []
    path = workdir / f"{name}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def serve_argv(config: Path) -> list[str]:
    script = Path(sys.executable).parent / "faultgate-stream"
    if script.exists():
        return [str(script), "serve", "--config", str(config)]
    return [sys.executable, "-c", "import sys; from faultgate_stream.cli.main import main; sys.exit(main())",
            "serve", "--config", str(config)]


# --------------------------------------------------------------------------- the collector peer
# The yardstick users hold us to: the collector the tests already build, with its own
# trace-buffering processors, on the same core and workload, sampling every trace through
# to the same null downstream. GOMAXPROCS=1 makes the Go runtime use one core as we do.

PEERS = {
    # three policies, every trace sampled: errors, slow runs, and the rest
    "tail_samp": ("tail_sampling", {
        # its decision ticker runs once a second, so 1 s is its shortest wait (the service's
        # root_grace here is 0.5 s plus its tick)
        "decision_wait": "1s",
        "num_traces": 200000,
        "expected_new_traces_per_sec": 10000,
        "policies": [
            {"name": "errors", "type": "status_code", "status_code": {"status_codes": ["ERROR"]}},
            {"name": "slow", "type": "latency", "latency": {"threshold_ms": 5000}},
            {"name": "rest", "type": "always_sample"},
        ],
    }),
    "groupbyt": ("groupbytrace", {"wait_duration": "1s", "num_traces": 200000}),
}


def collector_binary() -> Path | None:
    """The collector build tests use (scripts/install_peers.sh caches it by manifest), when
    it exists and has the peer processors; None otherwise (the bench runs without peers)."""
    repo = Path(__file__).resolve().parents[1]
    try:
        out = subprocess.run(["bash", str(repo / "scripts" / "install_peers.sh"), "--print-path"], cwd=repo,
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    path = Path(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 and out.stdout.strip() else None
    if path is None or not os.access(path, os.X_OK):
        return None
    try:
        comps = subprocess.run([str(path), "components"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return path if all(proc in comps for proc, _ in PEERS.values()) else None


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def collector_config(workdir: Path, name: str, downstream_port: int) -> tuple[Path, dict[str, int]]:
    processor, settings = PEERS[name]
    ports = {"grpc": free_port(), "metrics": free_port()}
    doc = {
        "receivers": {"otlp": {"protocols": {"grpc": {"endpoint": f"127.0.0.1:{ports['grpc']}",
                                                      "max_recv_msg_size_mib": MAX_MESSAGE // (1 << 20)}}}},
        # batch after the trace buffer, as the collector's docs recommend: both release one
        # trace per call, and without it the exporter would make an RPC per trace
        "processors": {processor: settings, "batch": {}},
        "exporters": {"otlp": {"endpoint": f"127.0.0.1:{downstream_port}", "tls": {"insecure": True},
                               "compression": DOWNSTREAM_COMPRESSION}},
        "service": {
            "pipelines": {"traces": {"receivers": ["otlp"], "processors": [processor, "batch"],
                                      "exporters": ["otlp"]}},
            "telemetry": {"logs": {"level": "warn"},
                          "metrics": {"level": "normal", "readers": [{"pull": {"exporter": {"prometheus": {
                              "host": "127.0.0.1", "port": ports["metrics"]}}}}]}},
        },
    }
    path = workdir / f"{name}.json"  # JSON is YAML: the collector reads it as is
    path.write_text(json.dumps(doc, indent=1))
    return path, ports


def spawn_collector(name: str, binary: Path, workdir: Path, downstream_port: int, cpu: int | None) -> Child:
    config, ports = collector_config(workdir, name, downstream_port)
    log = workdir / f"{name}.log"
    env = {**os.environ, "GOMAXPROCS": "1"}
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(binary), "--config", str(config)], stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, env=env, cwd=workdir, preexec_fn=_child_setup(cpu))
    child = Child(name, proc, log, ports, core=cpu)
    deadline = time.monotonic() + START_TIMEOUT_S
    for _ in range(int(START_TIMEOUT_S / POLL_S) + 1):  # up when its own metrics answer
        if proc.poll() is not None:
            die(f"{name} exited with code {proc.returncode}; its output:\n{child.tail()}")
        try:
            scrape(ports["metrics"])
            return child
        except OSError:
            if time.monotonic() > deadline:
                break
            time.sleep(POLL_S)
    die(f"{name} did not answer on its metrics port within {START_TIMEOUT_S:.0f}s; its output:\n{child.tail()}")


PEER_WATCHED = ("otelcol_receiver_accepted_spans", "otelcol_receiver_refused_spans",
                "otelcol_exporter_sent_spans", "otelcol_exporter_send_failed_spans")


def peer_counters(port: int) -> dict[str, float]:
    # the collector's Prometheus reader writes counters with or without _total, by version
    m = scrape(port)
    return {name: total(m, name) + total(m, name + "_total") for name in PEER_WATCHED}


async def wait_forwarded(child: Child, before: dict[str, float], sent_ok: int) -> Drain:
    """The peer's drain: every span it acknowledged has gone downstream (its decision wait
    passed and the exporter sent it), by its own counters, bounded by DRAIN_TIMEOUT_S."""
    started = time.perf_counter()
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    for _ in range(int(DRAIN_TIMEOUT_S / POLL_S) + 1):
        now = peer_counters(child.ports["metrics"])
        d = {k: int(now[k] - before[k]) for k in PEER_WATCHED}
        if d["otelcol_exporter_sent_spans"] + d["otelcol_exporter_send_failed_spans"] >= \
                d["otelcol_receiver_accepted_spans"] or time.monotonic() > deadline:
            break
        await asyncio.sleep(POLL_S)
    accepted, sent = d["otelcol_receiver_accepted_spans"], d["otelcol_exporter_sent_spans"]
    problems = []
    if accepted != sent_ok:
        problems.append(f"accepted {accepted} spans, the client was acknowledged {sent_ok}")
    if sent != accepted:
        problems.append(f"exported {sent} of {accepted} spans")
    for k in ("otelcol_receiver_refused_spans", "otelcol_exporter_send_failed_spans"):
        if d[k]:
            problems.append(f"{k} +{d[k]}")
    return Drain(time.perf_counter() - started, accepted, accepted // SPANS_PER_RUN,
                 d["otelcol_receiver_refused_spans"], sent, d["otelcol_exporter_send_failed_spans"],
                 problems)


# --------------------------------------------------------------------------- metrics

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def scrape(port: int) -> dict[str, dict[str, float]]:
    """name -> {labels: value} from the Prometheus text exposition."""
    # 30 s, not 5: on a loaded machine a collector's scrape can stall for seconds, and one
    # late scrape used to end the whole bench (seen with three benches and two soaks at once)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=SCRAPE_TIMEOUT_S) as r:
        text = r.read().decode()
    out: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m:
            out.setdefault(m.group(1), {})[m.group(2) or ""] = float(m.group(3))
    return out


def total(metrics: dict[str, dict[str, float]], name: str, **labels: str) -> float:
    want = [f'{k}="{v}"' for k, v in labels.items()]
    return sum(v for lab, v in metrics.get(name, {}).items() if all(w in lab for w in want))


WATCHED = ("faultgate_receiver_accepted_spans_total", "faultgate_receiver_refused_spans_total",
           "faultgate_receiver_rejected_spans_total", "faultgate_runs_total", "faultgate_exporter_sent_spans_total",
           "faultgate_exporter_failed_spans_total", "faultgate_exporter_queue_spans",
           "faultgate_duplicate_spans_total", "faultgate_late_spans_total")


def counters(port: int) -> dict[str, float]:
    m = scrape(port)
    return {name: total(m, name) for name in WATCHED}


# --------------------------------------------------------------------------- load

@dataclass
class Window:
    spans_per_s: float
    server_cpu_s: float       # CPU seconds of the server process over the window
    spans: int                # spans acknowledged inside the window
    server_util: float        # server CPU / wall: 1.0 = one core
    client_util: float
    downstream_cpu_s: float | None = None
    sent_ok: int = 0          # spans acknowledged over the whole round (warm-up included)
    refused: int = 0          # spans of calls that failed, by any status
    errors: dict[str, int] = field(default_factory=dict)
    first_error: str = ""     # the first failed call's status, message and the seconds into the load it came
    steal: float = 0.0        # share of the server's core (of all cores, unpinned) stolen by the hypervisor

    @property
    def cpu_us_per_span(self) -> float:
        return self.server_cpu_s / self.spans * 1e6 if self.spans else float("nan")


async def drive(call, requests: Requests, spans_per_request: int, warmup: float, seconds: float, inflight: int,
                server: Child, downstream: Child | None, rate: float | None = None,
                call_timeout: float = CALL_TIMEOUT_S) -> Window:
    """``inflight`` workers send back to back until the window closes, or, with ``rate``
    (spans/s), each call at its slot of a fixed schedule (a late call does not make the
    next one early: the schedule never bunches up to catch up). The counters and the CPU
    clocks are read together at the two edges of the window, so the spans counted and the
    CPU they cost cover the same interval."""
    import grpc

    loop = asyncio.get_running_loop()
    ok = 0
    failed = 0
    errors: dict[str, int] = {}
    first_error = ""
    start = loop.time()
    end = start + warmup + seconds
    max_calls = 1_000_000  # a bound on count as well as time: ~1000x what a window can send
    interval = spans_per_request / rate if rate else 0.0
    next_at = start

    async def worker() -> None:
        nonlocal ok, failed, next_at, first_error
        for _ in range(max_calls):
            if interval:
                now = loop.time()
                at, next_at = next_at, max(next_at, now) + interval
                if at > now:
                    await asyncio.sleep(at - now)
            if loop.time() >= end:
                return
            try:
                await call(requests.next(), timeout=call_timeout)
            except grpc.aio.AioRpcError as e:
                failed += 1
                errors[e.code().name] = errors.get(e.code().name, 0) + 1
                if not first_error:  # which bound, or which transport failure: the code alone does not say
                    first_error = f"{e.code().name} {e.details()!r} at {loop.time() - start:.2f}s"
                await asyncio.sleep(0.05)  # a refused call is retried by a real sender; here: no spinning
                continue
            ok += 1

    def edge() -> tuple[float, int, float, float, float, float]:
        return (time.perf_counter(), ok, server.cpu(), sum(os.times()[:2]),
                downstream.cpu() if downstream is not None else 0.0, stolen_seconds(server.core))

    async def sampler() -> tuple:
        await asyncio.sleep(warmup)
        first = edge()
        await asyncio.sleep(seconds)
        return first, edge()

    tasks = [asyncio.create_task(worker()) for _ in range(inflight)]
    edges = asyncio.create_task(sampler())
    done, pending = await asyncio.wait(tasks, timeout=warmup + seconds + call_timeout + 5)
    for t in pending:  # unreachable while every call has its timeout; a bound all the same
        t.cancel()
    for t in done:
        t.result()  # a worker's unexpected exception ends the bench here, with its traceback
    (t0, n0, s0, c0, d0, st0), (t1, n1, s1, c1, d1, st1) = await edges
    wall = t1 - t0
    spans = (n1 - n0) * spans_per_request
    return Window(spans_per_s=spans / wall, server_cpu_s=s1 - s0, spans=spans, server_util=(s1 - s0) / wall,
                  client_util=(c1 - c0) / wall, downstream_cpu_s=(d1 - d0) if downstream is not None else None,
                  sent_ok=ok * spans_per_request, refused=failed * spans_per_request, errors=errors,
                  first_error=first_error,
                  steal=(st1 - st0) / wall / (1 if server.core is not None else os.cpu_count() or 1))


@dataclass
class Drain:
    seconds: float
    accepted: int
    runs: int
    refused: int
    exported: int
    export_failed: int
    problems: list[str]


async def wait_decided(child: Child, before: dict[str, float], sent_ok: int, export: bool) -> Drain:
    """Poll /metrics until the service has decided every run it acknowledged (and, with
    export, sent every span downstream), bounded by DRAIN_TIMEOUT_S."""
    started = time.perf_counter()
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    for _ in range(int(DRAIN_TIMEOUT_S / POLL_S) + 1):  # bounded in count and in time
        now = counters(child.ports["metrics"])
        d = {k: now[k] - before[k] for k in WATCHED}
        accepted = int(d["faultgate_receiver_accepted_spans_total"])
        runs_done = d["faultgate_runs_total"] * SPANS_PER_RUN >= accepted
        export_done = (not export) or (now["faultgate_exporter_queue_spans"] == 0 and d["faultgate_exporter_sent_spans_total"]
                                       + d["faultgate_exporter_failed_spans_total"] >= accepted)
        if (runs_done and export_done) or time.monotonic() > deadline:
            break
        await asyncio.sleep(POLL_S)
    problems = []
    if accepted != sent_ok:
        problems.append(f"accepted {accepted} spans, the client was acknowledged {sent_ok}")
    if int(d["faultgate_runs_total"]) * SPANS_PER_RUN != accepted:
        problems.append(f"decided {int(d['faultgate_runs_total'])} runs, expected {accepted // SPANS_PER_RUN}")
    for k in ("faultgate_receiver_refused_spans_total", "faultgate_receiver_rejected_spans_total",
              "faultgate_duplicate_spans_total", "faultgate_late_spans_total"):
        if d[k]:
            problems.append(f"{k} +{int(d[k])}")
    if export:
        if int(d["faultgate_exporter_sent_spans_total"]) != accepted:
            problems.append(f"exported {int(d['faultgate_exporter_sent_spans_total'])} of {accepted} spans")
        if d["faultgate_exporter_failed_spans_total"]:
            problems.append(f"export failed for {int(d['faultgate_exporter_failed_spans_total'])} spans")
    return Drain(time.perf_counter() - started, accepted, int(d["faultgate_runs_total"]),
                 int(d["faultgate_receiver_refused_spans_total"]), int(d["faultgate_exporter_sent_spans_total"]),
                 int(d["faultgate_exporter_failed_spans_total"]), problems)


def on_sigterm_cancel() -> None:
    """While the event loop runs, SIGTERM cancels the main task: the workers are cancelled
    cleanly and main()'s finally still stops the children."""
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, asyncio.current_task().cancel)


# --------------------------------------------------------------------------- the comparison

CONFIGS = ("null", "service", "export")


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def spread(xs: list[float], fmt: str) -> str:
    return f"{format(med(xs), fmt)} [{format(min(xs), fmt)}-{format(max(xs), fmt)}]" if xs else "n/a"


async def compare(args: argparse.Namespace, servers: dict[str, Child], downstream: Child,
                  template: tuple[bytes, list[int], int]) -> int:
    import grpc

    on_sigterm_cancel()
    body, offsets, spans_per_request = template
    requests = Requests(body, offsets, first_seq=time.time_ns())  # unique across bench runs too
    opts = [("grpc.max_send_message_length", MAX_MESSAGE), ("grpc.max_receive_message_length", MAX_MESSAGE)]
    channels, calls = {}, {}
    for name, child in servers.items():
        ch = grpc.aio.insecure_channel(f"127.0.0.1:{child.ports['grpc']}", options=opts)
        try:
            await asyncio.wait_for(ch.channel_ready(), timeout=START_TIMEOUT_S)
        except asyncio.TimeoutError:
            die(f"{name}: no gRPC connection to 127.0.0.1:{child.ports['grpc']} within {START_TIMEOUT_S:.0f}s")
        channels[name] = ch
        # identity serializers: the bytes go out as they are, nothing is encoded per call
        calls[name] = ch.unary_unary(METHOD, request_serializer=None, response_deserializer=None)

    configs = list(servers)  # CONFIGS, then the collector peers when they run
    results: dict[str, list[Window]] = {c: [] for c in configs}
    drains: dict[str, list[Drain]] = {c: [] for c in configs if c != "null"}
    fsync_p99: list[float] = []   # seconds, one per WAL window
    problems: list[str] = []
    print(f"{'round':>5} {'config':<8} {'spans/s':>10} {'srv CPU us/span':>16} {'srv CPU%':>8} {'client CPU%':>11}"
          f" {'steal':>6} {'decided in':>10}  check", flush=True)
    for rnd in range(1, args.rounds + 1):
        for name in configs:
            child = servers[name]
            peer = name in PEERS
            before = (peer_counters if peer else counters)(child.ports["metrics"]) if name != "null" else None
            fsync0 = fsync_buckets(child.ports["metrics"]) if name == "wal" else None
            w = await drive(calls[name], requests, spans_per_request, args.warmup, args.seconds, args.inflight,
                            child, downstream if name == "export" else None)
            if fsync0 is not None:
                fsync_p99.append(quantile(0.99, fsync0, fsync_buckets(child.ports["metrics"])))
            results[name].append(w)
            note = "-"
            decided = ""
            if before is not None:
                if peer:
                    dr = await wait_forwarded(child, before, w.sent_ok)
                    note = f"ok: {dr.exported} of {dr.accepted} spans forwarded"
                else:
                    exporting = name in ("export", "wal")
                    dr = await wait_decided(child, before, w.sent_ok, export=exporting)
                    note = (f"ok: {dr.runs} runs = {dr.accepted} spans / {SPANS_PER_RUN}"
                            + (f", {dr.exported} exported" if exporting else "")
                            + (f", fsync p99 {fsync_p99[-1] * 1e3:.1f} ms" if name == "wal" else ""))
                drains[name].append(dr)
                decided = f"{dr.seconds:.2f}s"
                if dr.problems:
                    note = "PROBLEM: " + "; ".join(dr.problems)
                    problems += [f"round {rnd} {name}: {p}" for p in dr.problems]
            if w.refused:
                problems.append(f"round {rnd} {name}: {w.refused} spans refused ({w.errors}; first: {w.first_error})")
                note += f"; refused {w.refused} spans {w.errors}"
            print(f"{rnd:>5} {name:<8} {w.spans_per_s:>10,.0f} {w.cpu_us_per_span:>16.2f} {w.server_util * 100:>7.0f}%"
                  f" {w.client_util * 100:>10.0f}% {w.steal * 100:>5.1f}% {decided:>10}  {note}", flush=True)
    for ch in channels.values():
        await ch.close()

    per_round = {c: [w.spans_per_s for w in results[c]] for c in configs}
    vs_null = [s / n if n else float("nan") for s, n in zip(per_round["service"], per_round["null"])]
    export_cost = [e / s if s else float("nan") for e, s in zip(per_round["export"], per_round["service"])]
    print()
    print(f"medians of {args.rounds} rounds [min-max]; {args.warmup:g}s warm-up + {args.seconds:g}s measured per window; "
          f"servers on CPU {SERVER_CPU}, load generator on CPU {CLIENT_CPU}")
    print(f"{'config':<8} {'spans/s':>30} {'server CPU us/span':>26} {'server CPU%':>12}")
    for c in configs:
        ws = results[c]
        print(f"{c:<8} {spread([w.spans_per_s for w in ws], ',.0f'):>30} "
              f"{spread([w.cpu_us_per_span for w in ws], '.2f'):>26} {med([w.server_util * 100 for w in ws]):>11.0f}%")
    ds = [w.downstream_cpu_s / w.spans * 1e6 for w in results["export"] if w.downstream_cpu_s is not None and w.spans]
    if ds:
        print(f"downstream null receiver (CPU {CLIENT_CPU}, not counted above): {med(ds):.2f} CPU us per exported span")
    print()
    print("ratios, median of the per-round ratios [min-max] (each pair measured back to back, seconds apart):")
    print(f"  service / null      throughput  {spread(vs_null, '.3f')}"
          f"   (null CPU us/span / service CPU us/span: "
          f"{med([n.cpu_us_per_span / s.cpu_us_per_span for n, s in zip(results['null'], results['service'])]):.3f})")
    print(f"  export-on / off     throughput  {spread(export_cost, '.3f')}"
          f"   (export adds {med([e.cpu_us_per_span - s.cpu_us_per_span for e, s in zip(results['export'], results['service'])]):.2f}"
          f" CPU us/span)")
    for c, base in (("loop", "service"), ("bound", "service"), ("window", "bound"), ("plugin", "service"),
                    ("rules", "service"), ("wal", "export")):
        if c in results:
            ratio = [x / b if b else float("nan") for x, b in zip(per_round[c], per_round[base])]
            added = med([x.cpu_us_per_span - b.cpu_us_per_span for x, b in zip(results[c], results[base])])
            print(f"  {c + ' / ' + base:<20}throughput  {spread(ratio, '.3f')}   ({c} adds {added:.2f} CPU us/span)")
    peers = [c for c in configs if c in PEERS]
    vs_peer = {c: [e / t if t else float("nan") for e, t in zip(per_round["export"], per_round[c])] for c in peers}
    for c in peers:
        cpu = med([t.cpu_us_per_span / e.cpu_us_per_span for e, t in zip(results["export"], results[c])])
        print(f"  export-on / {c:<10}throughput  {spread(vs_peer[c], '.3f')}"
              f"   ({c} CPU us/span / export-on CPU us/span: {cpu:.3f})")
    ours = [c for c in configs if c not in PEERS]
    runs = sum(d.runs for c in ours if c != "null" for d in drains[c])
    accepted = sum(d.accepted for c in ours if c != "null" for d in drains[c])
    exported = sum(d.exported for c in ("export", "wal") if c in drains for d in drains[c])
    refused = sum(w.refused for c in ours for w in results[c])
    print(f"work done by the service: {runs:,} runs decided = {accepted:,} accepted spans / {SPANS_PER_RUN}; "
          f"{exported:,} spans exported; {refused:,} spans refused")
    # The service remembers decided traces, up to assemble.decision_cache (traces) and
    # decision_cache_bytes, so it is not the same process in the last round as in the first:
    # show how far that went, from its own gauges.
    from faultgate_stream.assemble.config import AssembleConfig

    cfg = AssembleConfig()
    state = scrape(servers["service"].ports["metrics"])
    held, held_bytes = total(state, "faultgate_decision_cache_traces"), total(state, "faultgate_decision_cache_bytes")
    first, last = per_round["service"][0], per_round["service"][-1]
    # and its CPU a span, which is what the process's age could move: at ~99% of its core, a
    # fall in spans/s at the same CPU a span is the machine (bench/aged.py tells them apart)
    cpu_first, cpu_last = results["service"][0].cpu_us_per_span, results["service"][-1].cpu_us_per_span
    print(f"service state: decision cache {held:,.0f} traces, {held_bytes / 2**20:.1f} MiB "
          f"(bounds: assemble.decision_cache {cfg.decision_cache:,}, decision_cache_bytes "
          f"{cfg.decision_cache_bytes / 2**20:.0f} MiB); service round 1 -> {args.rounds}: {first:,.0f} -> {last:,.0f} "
          f"spans/s ({last / first if first else float('nan'):.2f}x), {cpu_first:.2f} -> {cpu_last:.2f} CPU us/span "
          f"({cpu_last / cpu_first if cpu_first else float('nan'):.2f}x)")
    extra, late_problems = await latency_and_soak(args, servers["export"], template, med(per_round["export"]))
    problems += late_problems
    if problems:
        print(f"{len(problems)} PROBLEM(S):")
        for p in problems[:20]:
            print(f"  {p}")
    peer_result = "".join(f" vs_{PEERS[c][0]}={med(vs_peer[c]):.2f}" for c in peers)
    if "wal" in results:
        wal_cost = [x / e if e else float("nan") for x, e in zip(per_round["wal"], per_round["export"])]
        print(f"  write-ahead log: fsync p99 per window {spread([f * 1e3 for f in fsync_p99], '.1f')} ms "
              f"(faultgate_wal_fsync_seconds; its buckets set the resolution)")
        peer_result += f" wal_cost={med(wal_cost):.2f} wal_fsync_p99_ms={med(fsync_p99) * 1e3:.1f}"
    print(f"RESULT live_spans_per_s={med(per_round['service']):.0f} vs_null={med(vs_null):.2f} "
          f"export_cost={med(export_cost):.2f}{peer_result} {' '.join(extra)}", flush=True)
    return 1 if problems else 0


# --------------------------------------------------------------------------- latency, memory, soak

def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def delay_buckets(port: int) -> dict[float, float]:
    """Cumulative counts of faultgate_verdict_delay_seconds by upper bound, all agents."""
    m = scrape(port).get("faultgate_verdict_delay_seconds_bucket", {})
    out: dict[float, float] = {}
    for labels, v in m.items():
        le = re.search(r'le="([^"]+)"', labels)
        if le:
            bound = float("inf") if le.group(1) == "+Inf" else float(le.group(1))
            out[bound] = out.get(bound, 0.0) + v
    return out


def fsync_buckets(port: int) -> dict[float, float]:
    """Cumulative counts of faultgate_wal_fsync_seconds by upper bound."""
    out: dict[float, float] = {}
    for labels, v in scrape(port).get("faultgate_wal_fsync_seconds_bucket", {}).items():
        le = re.search(r'le="([^"]+)"', labels)
        if le:
            out[float("inf") if le.group(1) == "+Inf" else float(le.group(1))] = v
    return out


def full_collections(port: int) -> tuple[float, float]:
    """The service's full (generation 2) garbage collections so far: how many, and seconds."""
    m = scrape(port)
    return (total(m, "faultgate_gc_collections_total", generation="2"),
            total(m, "faultgate_gc_pause_seconds_total", generation="2"))


def quantile(q: float, before: dict[float, float], after: dict[float, float]) -> float:
    """histogram_quantile over the window's bucket deltas, interpolated inside a bucket as
    Prometheus does: its resolution is the buckets' (docs/metrics.md lists them)."""
    bounds = sorted(after)
    counts = [after[b] - before.get(b, 0.0) for b in bounds]
    if not counts or counts[-1] <= 0:
        return float("nan")
    rank = q * counts[-1]
    prev_b, prev_c = 0.0, 0.0
    for b, c in zip(bounds, counts):
        if c >= rank:
            if b == float("inf"):
                return prev_b
            return prev_b + (b - prev_b) * ((rank - prev_c) / (c - prev_c) if c > prev_c else 0.0)
        prev_b, prev_c = b, c
    return bounds[-1]


async def paced(call, child: Child, requests: Requests, spans_per_request: int, rate: float, seconds: float,
                inflight: int) -> dict[str, float]:
    """One window at ``rate`` spans/s against the export-on service: throughput, verdict
    delay p50/p99 (root arrival to verdict, the service's histogram), and the memory the
    service says it holds for spans in flight (its bytes gauge over its spans gauge,
    sampled every half second under load) against the serialized bytes of those spans.
    RSS is printed beside it: it cannot isolate in-flight spans (the allocator keeps what
    it freed, the decision cache grows), but it shows a soak's growth."""
    port = child.ports["metrics"]
    buckets0, before, gc0 = delay_buckets(port), counters(port), full_collections(port)
    samples: list[tuple[float, float]] = []

    async def sample() -> None:
        for _ in range(int((seconds + 1) / 0.5) + 1):  # bounded: one sample every half second
            await asyncio.sleep(0.5)
            m = scrape(port)
            held = total(m, "faultgate_memory_held_bytes") or total(m, "faultgate_bytes_in_memory")
            samples.append((held, total(m, "faultgate_spans_in_memory")))

    sampler = asyncio.create_task(sample())
    w = await drive(call, requests, spans_per_request, 1.0, seconds, inflight, child, None, rate=rate)
    sampler.cancel()
    dr = await wait_decided(child, before, w.sent_ok, export=True)
    buckets1, gc1 = delay_buckets(port), full_collections(port)
    held = [(b, n) for b, n in samples if n > 0]
    m = scrape(port)
    return {"spans_per_s": w.spans_per_s, "cpu_us_per_span": w.cpu_us_per_span, "steal": w.steal,
            "full_gcs": gc1[0] - gc0[0], "full_gc_s": gc1[1] - gc0[1],
            "decided": total(m, "faultgate_decision_cache_traces"), "amend": total(m, "faultgate_amend_store_runs"),
            "p50": quantile(0.5, buckets0, buckets1), "p99": quantile(0.99, buckets0, buckets1),
            "rss": float(rss_bytes(child.pid)), "problems": dr.problems,
            "bytes_per_span_held": med([b / n for b, n in held]) if held else float("nan"),
            "spans_in_flight": med([n for _, n in held]) if held else 0.0}


async def export_call(child: Child, timeout: float):
    """A channel to ``child`` once it is connected, and its Export call with identity
    serializers (the pre-encoded requests go out as they are)."""
    import grpc

    ch = grpc.aio.insecure_channel(f"127.0.0.1:{child.ports['grpc']}",
                                   options=[("grpc.max_send_message_length", MAX_MESSAGE)])
    await asyncio.wait_for(ch.channel_ready(), timeout=timeout)
    return ch, ch.unary_unary(METHOD, request_serializer=None, response_deserializer=None)


async def latency_and_soak(args: argparse.Namespace, export: Child, template: tuple[bytes, list[int], int],
                           max_rate: float) -> tuple[list[str], list[str]]:
    """Verdict delay and memory at half ``max_rate``; with --soak, one such window a minute."""
    body, offsets, spans_per_request = template
    requests = Requests(body, offsets, first_seq=time.time_ns() + (1 << 40))
    ch, call = await export_call(export, START_TIMEOUT_S)
    rate = args.rate or max_rate / 2
    wire = len(body) / spans_per_request
    out: list[str] = []
    problems: list[str] = []
    minutes = args.soak or 0
    windows = max(1, int(minutes))
    print(f"\nat {'a fixed rate' if args.rate else 'half the export-on maximum'} ({rate:,.0f} spans/s), export on"
          + (f", {windows} one-minute windows (soak)" if minutes else "") + ":")
    print(f"{'window':>6} {'spans/s':>10} {'CPU us/span':>12} {'delay p50':>10} {'delay p99':>10} {'RSS MB':>8}"
          f" {'held B/span':>12} {'wire B/span':>12} {'in flight':>10} {'full GCs':>9} {'GC2 ms':>7} {'decided':>8}"
          f" {'kept':>6} {'steal':>6}")
    rows = []
    for i in range(windows):
        r = await paced(call, export, requests, spans_per_request, rate, 60.0 if minutes else args.seconds,
                        args.inflight)
        rows.append(r)
        print(f"{i + 1:>6} {r['spans_per_s']:>10,.0f} {r['cpu_us_per_span']:>12.2f} {r['p50']:>9.3f}s {r['p99']:>9.3f}s"
              f" {r['rss'] / 1e6:>8.1f} {r['bytes_per_span_held']:>12,.0f} {wire:>12,.0f} {r['spans_in_flight']:>10,.0f}"
              f" {r['full_gcs']:>9.0f} {r['full_gc_s'] * 1e3 / max(r['full_gcs'], 1):>7.1f} {r['decided']:>8,.0f}"
              f" {r['amend']:>6,.0f} {r['steal'] * 100:>5.1f}%", flush=True)
    await ch.close()
    for i, r in enumerate(rows):
        problems += [f"half-rate window {i + 1}: {p}" for p in r["problems"]]
    first, last = rows[0], rows[-1]
    out.append(f"verdict_delay_p99={med([r['p99'] for r in rows]):.3f}")
    out.append(f"held_vs_wire={med([r['bytes_per_span_held'] for r in rows]) / wire:.2f}")
    if minutes:
        out.append(f"soak_throughput={last['spans_per_s'] / first['spans_per_s']:.3f}")
        out.append(f"soak_rss={last['rss'] / first['rss']:.3f}")
    return out, problems


# --------------------------------------------------------------------------- --profile

async def profile_load(args: argparse.Namespace, child: Child, template: tuple[bytes, list[int], int],
                       export: bool) -> tuple[Drain, Window]:
    on_sigterm_cancel()
    body, offsets, spans_per_request = template
    requests = Requests(body, offsets, first_seq=time.time_ns())
    ch, call = await export_call(child, START_TIMEOUT_S)
    before = counters(child.ports["metrics"])
    w = await drive(call, requests, spans_per_request, 0.0, args.profile, args.inflight, child, None)
    await ch.close()
    print(f"under cProfile: {w.spans_per_s:,.0f} spans/s, {w.cpu_us_per_span:.2f} server CPU us/span "
          f"(the profiler's overhead included: compare shares, not microseconds, with the comparison's figures)")
    return await wait_decided(child, before, w.sent_ok, export=export), w


def callgrind_instructions(argv: list[str]) -> int:
    """Instructions callgrind counts over ``python argv`` (every thread, hash seed fixed);
    exits naming the command when it fails. What the in-process benches' ``--instructions``
    take a long run less a short run of."""
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, *argv]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    m = re.search(r"Collected : (\d+)", r.stderr)
    if r.returncode != 0 or m is None:
        print(f"callgrind failed ({' '.join(cmd)}):\n{r.stderr[-2000:]}{r.stdout[-2000:]}", file=sys.stderr)
        raise SystemExit(2)
    return int(m.group(1))


# --------------------------------------------------------------------------- --instructions

# Two paced windows of the same length, the second at three times the first's rate: their
# difference in instructions, over the difference in spans, is what a span costs live, with
# what the service spends per second whatever its load (the ticker, gRPC's timers) cancelled
# out. Under callgrind the service runs ~50x slower, so the rates are low; the bench's
# workload and the service's threads are the live ones.
INSTRUCTION_RATES = (512.0, 1536.0)
VALGRIND_START_S = 300.0      # imports run ~50x slower under callgrind
VALGRIND_CALL_TIMEOUT_S = 120.0


async def paced_window(child: Child, template: tuple[bytes, list[int], int], rate: float, seconds: float) -> Drain:
    body, offsets, spans_per_request = template
    requests = Requests(body, offsets, first_seq=time.time_ns())
    ch, call = await export_call(child, VALGRIND_START_S)
    before = counters(child.ports["metrics"])
    # under callgrind a call can wait seconds for a thread valgrind has not run (the WAL's
    # sync thread): a timed-out call would be work done and not counted as acknowledged
    w = await drive(call, requests, spans_per_request, 0.0, seconds, 2, child, None, rate=rate,
                    call_timeout=VALGRIND_CALL_TIMEOUT_S)
    await ch.close()
    dr = await wait_decided(child, before, w.sent_ok, export=True)
    if w.refused:
        dr.problems.append(f"{w.refused} spans refused ({w.first_error})")
    return dr


def live_instructions(args: argparse.Namespace, workdir: Path, downstream: Child, server_cpu: int | None,
                      template: tuple[bytes, list[int], int]) -> int:
    """Instructions a span of the export-on service, live: its threads, gRPC both ways, the
    GIL's hand-offs, all counted by callgrind (which runs the threads one at a time, so waits
    cost nothing). Unlike CPU time it does not move with this machine's load; set beside
    ``hot_path.py --instructions`` (the same stages in one thread) it says how much of the
    live service's extra time is extra work, and how much is the same work run slower.
    With ``--wal``, the same again with the write-ahead log on: what the log costs the core,
    whatever the disk and the machine's load do to its waits."""
    if shutil.which("valgrind") is None:
        die("--instructions needs valgrind on PATH (apt-get install valgrind)")
    variants = {"export": []}
    if args.wal:
        variants["wal"] = ["durability:", "  wal:", f'    dir: "{workdir / "wal-counted"}"', "    fsync: batch"]
    results = {}
    for variant, extra in variants.items():
        counts = []
        for rate in INSTRUCTION_RATES:
            name = f"{variant}-counted-{rate:.0f}"
            out = workdir / f"callgrind-{name}.out"
            argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                    *serve_argv(service_config(workdir, name, downstream.ports["grpc"], extra))]
            child = spawn(name, argv, workdir, server_cpu)
            try:
                wait_started(child, VALGRIND_START_S)
                dr = asyncio.run(paced_window(child, template, rate, args.instructions))
            finally:
                stop([child], VALGRIND_START_S)  # callgrind writes its count only at a clean exit
            m = re.search(r"Collected : (\d+)", child.log.read_text(errors="replace"))
            if m is None:
                die(f"callgrind reported no count; the service's output:\n{child.tail()}")
            if dr.problems:
                die(f"the service ({variant}) under callgrind at {rate:.0f} spans/s: " + "; ".join(dr.problems))
            count = int(m.group(1))
            counts.append((count, dr.accepted))
            print(f"{variant:<7} {rate:>8,.0f} spans/s offered for {args.instructions:.0f}s: {dr.accepted:,} spans "
                  f"decided and exported, {count:,} instructions", flush=True)
        (low, low_spans), (high, high_spans) = counts
        if high_spans <= low_spans:
            die("the faster window decided no more spans than the slower one; raise --instructions")
        results[variant] = (high - low) // (high_spans - low_spans)
    per_span = results["export"]
    print(f"export on, live: {per_span:,} instructions a span (the second window less the first; compare "
          f"hot_path.py --instructions)")
    line = f"RESULT live_instructions_per_span={per_span}"
    if "wal" in results:
        print(f"write-ahead log on: {results['wal']:,} instructions a span ({results['wal'] / per_span:.3f}x export on)")
        line += f" wal_instructions_per_span={results['wal']} wal_instructions_ratio={results['wal'] / per_span:.3f}"
    print(line)
    return 0


# Frames where a thread waits rather than works (idle pool workers, grpc's polling loop,
# the ticker's sleep, the metrics thread's event loop): wall-clock profiles charge them
# with idle time, so they are left out of the self-time list.
IDLE = ("acquire", "wait", "sleep", "'get' of '_queue.SimpleQueue'", "(_serve)", "select", "poll", "run_forever",
        "_run_once")


def print_profile(path: Path, spans: int, cpu_us_per_span: float) -> None:
    import pstats

    stats = pstats.Stats(str(path))
    rows = [(func, nc, tt, ct) for func, (_, nc, tt, ct, _) in stats.stats.items()]  # type: ignore[attr-defined]

    def where(func: tuple) -> str:
        file, line, name = func
        if file == "~":
            return name
        parts = Path(file).parts
        if "faultgate_stream" in parts:
            return "/".join(parts[parts.index("faultgate_stream") + 1:]) + f":{line}({name})"
        return f"{Path(file).name}:{line}({name})"

    def row(us: float, nc: int, func: tuple) -> str:
        return f"{us:>9.2f} {us / cpu_us_per_span:>6.1%} {nc:>9}  {where(func)}"

    print(f"\n'share' = us/span over the service's whole CPU per span under the profiler "
          f"({cpu_us_per_span:.2f} us, /proc); {spans:,} spans accepted")
    # a loop such as the ticker's spends most of its wall time in a wait it calls directly:
    # take those callees out of its cumulative time, so the ranking is of work
    stats.calc_callees()
    callees = stats.all_callees  # type: ignore[attr-defined]

    def busy_ct(func: tuple, ct: float) -> float:
        return ct - sum(v[3] for callee, v in callees.get(func, {}).items() if any(w in where(callee) for w in IDLE))

    print("cProfile, top 20 faultgate_stream functions by cumulative time (direct idle waits left out):")
    print(f"{'us/span':>9} {'share':>6} {'calls':>9}  function")
    ours = [(func, nc, tt, busy_ct(func, ct)) for func, nc, tt, ct in rows if "faultgate_stream" in func[0]]
    for func, nc, tt, ct in sorted(ours, key=lambda r: r[3], reverse=True)[:20]:
        print(row(ct / spans * 1e6, nc, func))
    print("\ncProfile, top 15 functions of any module by self time (idle waits left out; `with lock:` is no call "
          "cProfile sees, so a function that takes a lock has its wait for it in its self time):")
    print(f"{'us/span':>9} {'share':>6} {'calls':>9}  function")
    busy = [r for r in rows if not any(w in where(r[0]) for w in IDLE)]
    for func, nc, tt, ct in sorted(busy, key=lambda r: r[2], reverse=True)[:15]:
        print(row(tt / spans * 1e6, nc, func))


# --------------------------------------------------------------------------- main

def pinning() -> bool:
    try:
        allowed = os.sched_getaffinity(0)
    except AttributeError:
        return False
    return {SERVER_CPU, CLIENT_CPU} <= allowed


def main() -> int:
    p = argparse.ArgumentParser(description="Live throughput: faultgate-stream serve against a null OTLP receiver.")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (null, service, export) (default 5)")
    p.add_argument("--seconds", type=float, default=6.0, help="measured window per configuration (default 6)")
    p.add_argument("--warmup", type=float, default=2.0, help="warm-up before each window (default 2)")
    p.add_argument("--inflight", type=int, help="calls in flight (default 8; 1 with --profile, so that the "
                                                "profiled threads seldom wait for each other)")
    p.add_argument("--profile", type=float, metavar="S", help="no comparison: the service under cProfile for S "
                                                              "seconds of load, then its top functions")
    p.add_argument("--profile-export", action="store_true", help="with --profile: the service with span export on")
    p.add_argument("--soak", type=float, metavar="MINUTES", help="after the rounds, MINUTES one-minute windows at "
                                                                   "half the export-on maximum: throughput, RSS and "
                                                                   "verdict delay per minute")
    p.add_argument("--rate", type=float, metavar="SPANS_PER_S", help="the half-rate and soak windows at this rate "
                   "instead of half the measured export-on maximum (one round's maximum moves with the machine's load)")
    p.add_argument("--extra-checks", action="store_true", help="also measure the service with loop on, with a "
                   "bound per-run policy, and with windowed budgets added to it (issue 13)")
    p.add_argument("--own-checks", action="store_true", help="also measure the service with a no-op plug-in "
                   "(plugin / service) and with five CEL rules (rules / service), issue 33; --extra-checks "
                   "includes them")
    p.add_argument("--wal", action="store_true", help="also measure the export-on service with the write-ahead "
                   "log on (durability.wal, fsync: batch) against export-on without it, and its fsync p99; with "
                   "--instructions, its instructions a span beside export-on's")
    p.add_argument("--no-peers", action="store_true", help="leave out the collector's tail_sampling and "
                                                           "groupbytrace (the peers)")
    p.add_argument("--instructions", type=float, metavar="S", help="no comparison: instructions a span of the "
                   "export-on service by callgrind, from two paced windows of S seconds (30 is enough; ~2 min)")
    p.add_argument("--null-server", type=int, metavar="PORT", help=argparse.SUPPRESS)
    p.add_argument("--profiled-serve", nargs=2, metavar=("CONFIG", "OUT"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.null_server is not None:
        return null_server(args.null_server)
    if args.profiled_serve:
        return profiled_serve(*args.profiled_serve)
    if args.inflight is None:
        args.inflight = 1 if args.profile is not None else 8
    if not (1 <= args.rounds <= 50 and 0.5 <= args.seconds <= 120 and 0 <= args.warmup <= 60 and 1 <= args.inflight <= 256):
        die("--rounds 1..50, --seconds 0.5..120, --warmup 0..60, --inflight 1..256")
    if args.rate is not None and not 1 <= args.rate <= 10_000_000:
        die("--rate 1..10,000,000 spans/s")

    pinned = pinning()
    if pinned:
        # before any child is spawned: children inherit this, then move themselves to CPU 0
        os.sched_setaffinity(0, {CLIENT_CPU})
    else:
        print(f"warning: CPUs {SERVER_CPU} and {CLIENT_CPU} are not both available; running unpinned, "
              f"so server CPU% and the ratios are less steady", file=sys.stderr)
    tune_malloc()
    server_cpu = SERVER_CPU if pinned else None
    client_cpu = CLIENT_CPU if pinned else None
    template = build_template(32, random.Random(20261129))
    body, _, spans_per_request = template
    # SIGTERM (e.g. a CI timeout) must still reach the finally below that kills the children
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    workdir = Path(tempfile.mkdtemp(prefix="faultgate-bench-live-"))
    children: list[Child] = []
    try:
        if args.profile is not None:
            if not 1 <= args.profile <= 120:
                die("--profile 1..120 seconds")
            out = workdir / "service.pstats"
            export_port = None
            if args.profile_export:
                downstream = spawn_null("downstream", workdir, client_cpu)
                children.append(downstream)
                wait_started(downstream)
                export_port = downstream.ports["grpc"]
            svc = spawn("profiled service", [sys.executable, str(Path(__file__).resolve()), "--profiled-serve",
                                             str(service_config(workdir, "service", export_port)), str(out)],
                        workdir, server_cpu)
            children.append(svc)
            wait_started(svc)
            drain, window = asyncio.run(profile_load(args, svc, template, export=export_port is not None))
            if drain.problems:
                print("PROBLEM: " + "; ".join(drain.problems))
            stop(children)
            if not out.exists():
                die(f"the profiled service wrote no profile; its output:\n{svc.tail()}")
            print_profile(out, drain.accepted, window.cpu_us_per_span)
            return 1 if drain.problems else 0

        if args.instructions is not None:
            if not 5 <= args.instructions <= 300:
                die("--instructions 5..300 seconds")
            downstream = spawn_null("downstream", workdir, client_cpu)
            children.append(downstream)
            wait_started(downstream)
            return live_instructions(args, workdir, downstream, server_cpu, template)

        null = spawn_null("null", workdir, server_cpu)
        # the export target is the other side of the wire, like the load generator: on CPU 1,
        # so CPU 0 carries the service and nothing else
        downstream = spawn_null("downstream", workdir, client_cpu)
        children += [null, downstream]
        wait_started(null)
        wait_started(downstream)
        service = spawn("service", serve_argv(service_config(workdir, "service", None)), workdir, server_cpu)
        export = spawn("export", serve_argv(service_config(workdir, "export", downstream.ports["grpc"])),
                       workdir, server_cpu)
        children += [service, export]
        wait_started(service)
        wait_started(export)
        servers = {"null": null, "service": service, "export": export}
        if args.extra_checks or args.own_checks:
            # --own-checks alone: only issue 33's two, in the same rounds
            for name in [n for n in EXTRA_CHECKS if args.extra_checks or n in OWN_CHECKS]:
                servers[name] = spawn(name, serve_argv(service_config(workdir, name, None, extra_config(workdir, name))),
                                      workdir, server_cpu)
                children.append(servers[name])
                wait_started(servers[name])
        if args.wal:
            wal = ["durability:", "  wal:", f'    dir: "{workdir / "wal"}"', "    fsync: batch"]
            servers["wal"] = spawn("wal", serve_argv(service_config(workdir, "wal", downstream.ports["grpc"], wal)),
                                   workdir, server_cpu)
            children.append(servers["wal"])
            wait_started(servers["wal"])
        binary = collector_binary() if not args.no_peers else None
        if binary is not None:
            for name in PEERS:
                servers[name] = spawn_collector(name, binary, workdir, downstream.ports["grpc"], server_cpu)
                children.append(servers[name])
        elif not args.no_peers:
            print("warning: no collector build with tail_sampling and groupbytrace (bash scripts/install_peers.sh "
                  "builds it); running without the collector peers", file=sys.stderr)
        print(f"workload: {spans_per_request} spans per request ({spans_per_request // SPANS_PER_RUN} agent runs of "
              f"{SPANS_PER_RUN} spans), {len(body):,} bytes = {len(body) / spans_per_request:.0f} B/span; "
              f"{args.inflight} calls in flight; fresh trace ids per request")
        print(f"servers: null (pid {null.pid}), service (pid {service.pid}), export (pid {export.pid}) on "
              f"CPU {server_cpu if pinned else 'any'}; downstream null (pid {downstream.pid}) and load generator on "
              f"CPU {client_cpu if pinned else 'any'}; malloc thresholds raised in all")
        return asyncio.run(compare(args, servers, downstream, template))
    except asyncio.CancelledError:
        die("interrupted (SIGTERM)", 143)
    finally:
        stop(children)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
