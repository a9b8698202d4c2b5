"""What a span in flight really costs in memory, against its serialized bytes.

    .venv/bin/python bench/held_memory.py [--requests N]

``bench/live.py`` prints the service's own figure for bytes held per span in flight (its
``faultgate_memory_held_bytes`` gauge, the sum of the records' ``size`` estimates, over its
spans gauge). An estimate can flatter, so this measures the real thing with tracemalloc:
N of live.py's requests (512 spans, 32 runs of 16) read by the service's OTLP reader into
records and held by the assembler and the evaluator (default checks; a root_grace of an
hour, so that nothing completes), then everything allocated and still alive, divided by
the spans held. The span export's held roots (each run's root waits for its verdict as its
own encoding, with its resource and scope: ``export/spans/held.py``) are added from the
sizes of those encodings. The request's own buffer is not counted: the receiver frees it
when the call returns.

A record's attributes are held by the compiled core (``SpanAttributes``), on the Rust
heap, which tracemalloc does not see: their bytes (what ``sys.getsizeof`` says of each
record's attributes past the Python object itself) are added. ``--attributes standard``
has the reader keep the check API's ``STANDARD_ATTRIBUTES`` as well, as a plug-in makes it.

The last line is ``RESULT held_bytes_per_span=<int> estimate_bytes_per_span=<int>
wire_bytes_per_span=<int> held_vs_wire=<x.xx>``.
"""
from __future__ import annotations

import argparse
import gc
import random
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import live  # noqa: E402 (bench/live.py: the same workload)
from faultgate_stream.assemble.assembler import Assembler  # noqa: E402
from faultgate_stream.assemble.config import AssembleConfig  # noqa: E402
from faultgate_stream.checks import api  # noqa: E402
from faultgate_stream.checks.registry import select  # noqa: E402
from faultgate_stream.model.clock import ManualClock  # noqa: E402
from faultgate_stream.model.records import SpanAttributes  # noqa: E402
from faultgate_stream.read import otlp_proto  # noqa: E402
from faultgate_stream.read.projection import Projection  # noqa: E402
from faultgate_stream.verdict.ruleset import Ruleset  # noqa: E402
from faultgate_stream.verdict.evaluate import Evaluator  # noqa: E402


class _Discard:
    def early(self, finding) -> None:
        pass

    def verdict(self, verdict) -> None:
        pass


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=20, help="requests held at once (default 20: 10,240 spans)")
    p.add_argument("--attributes", choices=("checks", "standard"), default="checks",
                   help="the attributes the reader keeps: the default checks' (default), or with the check "
                        "API's STANDARD_ATTRIBUTES too, as a plug-in makes it")
    args = p.parse_args()
    body, offsets, per_request = live.build_template(32, random.Random(20261129))
    requests = live.Requests(body, offsets, first_seq=time.time_ns())
    bodies = [requests.next() for _ in range(args.requests)]
    checks = select()
    # the receivers' reading: only the attributes the default checks and the run's facts need
    kept = Ruleset(tuple(checks)).attributes
    projection = Projection(kept | api.STANDARD_ATTRIBUTES if args.attributes == "standard" else kept)
    asm = Assembler(Evaluator(checks, _Discard()), ManualClock(10**18),
                    AssembleConfig(root_grace=3600, max_traces=10**6, max_bytes=2**40))
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    roots_wire = 0
    core_attrs = 0  # the Rust heap's bytes of the records' attributes
    for b in bodies:
        request, decoded = otlp_proto.decode(b, projection)  # the compiled reader makes the records
        records = decoded.spans
        asm.add(records)
        core_attrs += sum(a.__sizeof__() - type(a).__basicsize__ for r in records
                          if type(a := r.attrs) is SpanAttributes)
        for rs in request.message.resource_spans:
            framing = rs.resource.ByteSize() + sum(ss.scope.ByteSize() for ss in rs.scope_spans)
            roots = [s for ss in rs.scope_spans for s in ss.spans if not s.parent_span_id]
            roots_wire += sum(s.ByteSize() for s in roots) + framing * len(roots)
        del request, decoded, records
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base + core_attrs
    tracemalloc.stop()
    spans = asm.spans_in_flight
    assert spans == per_request * args.requests, (spans, per_request * args.requests)
    wire = len(body) / per_request
    per_span = (held + roots_wire) / spans
    print(f"{spans:,} spans in flight ({args.requests} requests of {per_request}): records, assembler and evaluator "
          f"{held / spans:,.0f} B/span (tracemalloc, and the core's attributes {core_attrs / spans:,.0f} B/span), "
          f"held roots' encodings {roots_wire / spans:,.0f} B/span")
    print(f"the service's own estimate (faultgate_memory_held_bytes / spans): {asm.bytes_held / spans:,.0f} B/span; "
          f"serialized: {wire:,.0f} B/span")
    print(f"RESULT held_bytes_per_span={per_span:.0f} estimate_bytes_per_span={asm.bytes_held / spans:.0f} "
          f"wire_bytes_per_span={wire:.0f} held_vs_wire={per_span / wire:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
