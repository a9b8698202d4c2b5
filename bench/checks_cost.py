"""What issue 13's checks cost per span, in process: CPU time of assembling and judging the
live bench's workload with the default rules, with ``loop`` added, with a per-run policy,
and with windowed budgets in that policy, interleaved in rounds; and issue 33's checks of
one's own: a plug-in that does nothing (``plugin``) and ``live.py``'s five CEL rules
(``rules``), each beside the default rules, spans observed as they arrive as live. The
plug-in's thread is included: CPU time is the process's, and each configuration's time
ends when the plug-ins' thread has answered every run.

    .venv/bin/python bench/checks_cost.py [--rounds 7] [--requests 40]
    .venv/bin/python bench/checks_cost.py --instructions [--configs default,plugin,rules]
    .venv/bin/python bench/checks_cost.py --bytecodes plugin-inline

The workload is ``bench/live.py``'s (``build_template``): requests of 32 runs of 16 spans,
read once into records, then fed request by request through the assembler and evaluator
(fresh trace ids per request, so every run is decided). Its 32 conversation ids repeat in
every request with the same span times, so each windowed-budget key fills to
``checks.windows.max_events_per_key``: a hot key's worst case. CPU time
(``time.process_time``) rather than wall time, medians of the rounds, and the differences
are taken within a round: on a shared machine this is steadier than ``bench/live.py
--extra-checks``, which measures the same configurations end to end over gRPC.

``--instructions`` counts instead of timing, so the machine's load cannot move the figure:
for each configuration, callgrind's instructions of a run of ``LONG`` requests less a run of
``SHORT`` (imports, compiling and warming cancel out), per span, and each beside
``default``'s. For plug-ins that figure is not load-proof: under callgrind the GIL's 5 ms
switch interval is a fiftieth of the work, so how often the threads swap (and what a swap
costs) follows the machine's load, and the kernel's part of a swap is not counted at all.
Plug-ins are counted under a CPU budget and deadline no call reaches (``UNREACHED``): under
callgrind a call takes ~50x its time, and a time slice more on a loaded machine, so with the
default budget the stage's clocks took their slow path, and calls overran, at a rate the
load set (d0507e5's ``plugin-inline``: 4,498 and 3,486 instructions a span over default in
two runs at load 6-8; under ``UNREACHED`` 4,498 and 4,510). Natively a no-op's call does neither.
``plugin-inline`` is the same plug-in with the isolation stage's work done as each run is
handed over, on the same thread (a bench-only shortcut: no isolation): the Python the
plug-in path costs on both sides, counted exactly; ``plugin`` less ``plugin-inline`` in CPU
time is what the second thread adds.
"""
from __future__ import annotations

import argparse
import collections
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from live import FIVE_RULES, SPANS_PER_RUN, build_template, callgrind_instructions  # noqa: E402

from faultgate_stream.assemble.assembler import Assembler  # noqa: E402
from faultgate_stream.checks import api  # noqa: E402
from faultgate_stream.checks.config import IsolationConfig  # noqa: E402
from faultgate_stream.checks.loop import Loop  # noqa: E402
from faultgate_stream.checks.plugins.check import Origin  # noqa: E402
from faultgate_stream.checks.plugins.isolate import _Call, _Complete  # noqa: E402
from faultgate_stream.checks.plugins.load import build  # noqa: E402
from faultgate_stream.checks.rules.check import rule_checks  # noqa: E402
from faultgate_stream.checks.rules.load import load_rules  # noqa: E402
from faultgate_stream.checks.policy import Policy, PolicyCheck  # noqa: E402
from faultgate_stream.checks.registry import select  # noqa: E402
from faultgate_stream.checks.window_store import WindowStore  # noqa: E402
from faultgate_stream.cli import heap  # noqa: E402
from faultgate_stream.model.clock import ManualClock  # noqa: E402
from faultgate_stream.model.verdict import Completion  # noqa: E402
from faultgate_stream.pipeline import OFFLINE_LIMITS, VerdictList  # noqa: E402
from faultgate_stream.read import otlp_proto  # noqa: E402
from faultgate_stream.verdict.evaluate import Evaluator  # noqa: E402

WINDOWED = {"max_calls": [{"max": 100000, "within": "10m", "per": "session"}],
            "limits": [{"tool": "lookup_order", "arg": "limit", "sum": True, "max": 10**12, "within": "24h",
                        "per": "session", "by": "query"}]}


class Noop(api.Check):
    name = "noop"

    def finish(self, state, run):
        return api.passed()


def configs(store: WindowStore, rules_file: str) -> dict:
    return {
        "default": lambda: select(None),
        "loop": lambda: select(None) + [Loop()],
        "bound": lambda: select(None) + [PolicyCheck(Policy.from_mapping({"max_calls": 100000}))],
        "window": lambda: select(None) + [PolicyCheck(Policy.from_mapping(WINDOWED), store=store)],
        "plugin": lambda: select(None) + [build(Noop, "bench", Origin("bench", "", "", "checks_cost:Noop"))],
        "plugin-inline": lambda: select(None) + [build(Noop, "bench", Origin("bench", "", "", "checks_cost:Noop"))],
        "rules": lambda: select(None) + rule_checks(load_rules(rules_file)),
    }


def template_spans() -> list:
    body, _, _ = build_template(32, random.Random(20261129))
    return otlp_proto.decode(body)[1].spans


def requests(spans: list, n: int, first: int) -> list[list]:
    """``n`` requests with trace ids never used before (``first`` on), as the live bench
    patches them: every run is new to the store too, never a run judged again."""
    return [[s._replace(trace_id=f"{i:08x}{s.trace_id[8:]}") for s in spans] for i in range(first, first + n)]


# --instructions' plug-in limits: no call of a no-op reaches them, however slow callgrind runs it
UNREACHED = IsolationConfig(cpu_budget=60.0, deadline=600.0)


def cpu_us_per_span(checks: list, reqs: list[list], inline: bool = False, isolation: Any = None) -> float:
    sink = VerdictList()
    evaluator = Evaluator(checks, sink, isolation=isolation)
    if inline:  # the isolation stage's work done as each run is handed over, on this thread
        stage = evaluator.isolation
        call = _Call(stage._gen, threading.get_ident())  # the worker's record of its calls
        stage._put = lambda item: (stage._complete if type(item) is _Complete else stage._observe)(item, call)
    assembler = Assembler(evaluator, ManualClock(), OFFLINE_LIMITS)
    t0 = time.process_time()
    for r in reqs:
        assembler.add(r)
        assembler.close_all(Completion.COMPLETE)
    evaluator.close()  # the plug-ins' thread has answered every run
    spent = time.process_time() - t0
    assert len(sink.verdicts) * SPANS_PER_RUN == sum(len(r) for r in reqs)
    return spent / sum(len(r) for r in reqs) * 1e6


LONG, SHORT = 24, 4  # --instructions' two runs of each configuration, in requests


def instructions(names: list[str]) -> int:
    def count(name: str, requests: int) -> int:
        return callgrind_instructions([__file__, "--only", name, "--requests", str(requests)])

    spans = (LONG - SHORT) * len(template_spans())
    per_span = {}
    for name in names:
        per_span[name] = (count(name, LONG) - count(name, SHORT)) / spans
        added = f" (+{per_span[name] - per_span['default']:,.0f} over default)" if "default" in per_span else ""
        print(f"{name:>8}: {per_span[name]:,.0f} instructions a span{added}", flush=True)
    print("RESULT " + " ".join(f"{k}_instructions_per_span={v:.0f}" for k, v in per_span.items()))
    return 0


def bytecodes(name: str, requests_: int = 3) -> int:
    """Bytecodes a run ``name`` runs beyond ``default``, by function (a ``sys.settrace``
    opcode count on every thread; exact for ``plugin-inline``): where the plug-in path's
    Python goes, in seconds rather than callgrind's minutes."""
    spans = template_spans()
    rules_file = Path(tempfile.mkdtemp()) / "rules.yaml"
    rules_file.write_text(FIVE_RULES)
    made = configs(WindowStore(), str(rules_file))

    def count(config: str, first: int) -> collections.Counter:
        cpu_us_per_span(made[config](), requests(spans, 1, first + 10_000), config == "plugin-inline")  # warm
        counts: collections.Counter = collections.Counter()

        def tracer(frame: Any, event: str, arg: Any) -> Any:
            frame.f_trace_opcodes = True
            if event == "opcode":
                counts[f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}"] += 1
            return tracer

        sys.settrace(tracer)
        threading.settrace(tracer)
        try:
            cpu_us_per_span(made[config](), requests(spans, requests_, first), config == "plugin-inline")
        finally:
            sys.settrace(None)
            threading.settrace(None)
        return counts

    runs = requests_ * len(spans) // SPANS_PER_RUN
    added = count(name, 0)
    added.subtract(count("default", 1_000))
    for where, n in sorted(added.items(), key=lambda kv: -abs(kv[1])):
        if abs(n) >= runs // 2:
            print(f"{n / runs:8.1f}  {where}")
    print(f"RESULT {name}_bytecodes_per_run={sum(added.values()) / runs:.0f}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--requests", type=int, default=40, help="requests of 512 spans per configuration and round")
    p.add_argument("--instructions", action="store_true", help="instructions a span by callgrind (load-proof)")
    p.add_argument("--configs", default="default,plugin-inline,rules,plugin",
                   help="--instructions: these configurations")
    p.add_argument("--bytecodes", metavar="CONFIG", help="bytecodes a run CONFIG adds to default, by function")
    p.add_argument("--only", help=argparse.SUPPRESS)  # one configuration once (what --instructions counts)
    args = p.parse_args()
    if args.instructions:
        return instructions(args.configs.split(","))
    if args.bytecodes:
        return bytecodes(args.bytecodes)
    spans = template_spans()
    heap.settle()  # the collector as ``serve`` leaves it (``hot_path.py`` too): start-up frozen, its thresholds
    store = WindowStore()  # one for every round: keys stay full, the hot case
    rules_file = Path(tempfile.mkdtemp()) / "rules.yaml"
    rules_file.write_text(FIVE_RULES)
    made = configs(store, str(rules_file))
    if args.only:
        cpu = cpu_us_per_span(made[args.only](), requests(spans, args.requests, 0), args.only == "plugin-inline",
                              UNREACHED)
        print(f"{args.only}: {cpu:.2f} CPU us/span")
        return 0
    results: dict[str, list[float]] = {k: [] for k in made}
    print(f"{'round':>5} " + " ".join(f"{k:>10}" for k in made) + "   (CPU us per span)")
    first = 0
    for rnd in range(1, args.rounds + 1):
        for name, build in made.items():
            reqs = requests(spans, args.requests, first)
            first += args.requests
            results[name].append(cpu_us_per_span(build(), reqs, name == "plugin-inline"))
        print(f"{rnd:>5} " + " ".join(f"{results[k][-1]:>10.2f}" for k in made), flush=True)
    med = {k: statistics.median(v) for k, v in results.items()}

    def added(a: str, b: str) -> float:
        return statistics.median([x - y for x, y in zip(results[a], results[b])])

    print(f"median CPU us/span: " + ", ".join(f"{k} {v:.2f}" for k, v in med.items()))
    print(f"loop adds {added('loop', 'default'):.2f}; a bound per-run policy adds {added('bound', 'default'):.2f}; "
          f"windowed budgets add {added('window', 'bound'):.2f} over it (store: {len(store)} keys, "
          f"{store.events} events, {store.evicted_events} evicted)")
    print(f"a no-op plug-in adds {added('plugin', 'default'):.2f} ({added('plugin-inline', 'default'):.2f} with its "
          f"work done inline, no second thread); five CEL rules add {added('rules', 'default'):.2f}")
    print(f"RESULT loop_us_per_span={added('loop', 'default'):.2f} bound_us_per_span={added('bound', 'default'):.2f} "
          f"window_us_per_span={added('window', 'bound'):.2f} plugin_us_per_span={added('plugin', 'default'):.2f} "
          f"plugin_inline_us_per_span={added('plugin-inline', 'default'):.2f} "
          f"rules_us_per_span={added('rules', 'default'):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
