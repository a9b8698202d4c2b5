"""CEL implementations for rules without code, side by side on what rules do: five rules
over one span map, and one program over a stretch of 16 span maps (the live workload's
run), with the Python values turned into CEL values inside the timing as the service must.

    python bench/cel_engines.py

Measures whichever of these the interpreter can import: PyPI ``cel-expr-python`` (the
CEL project's binding of cel-cpp; ``checks/rules`` uses it), ``common-expression-language``
(``import cel``, the cel-interpreter crate's wheel) and ``cel-python`` (``import celpy``,
pure Python). Install the other two in a scratch venv to compare them, never in the
project's (``common-expression-language`` brings typer, rich and pygments). CPU time
(``time.process_time``), the median of 5 repeats.
"""
from __future__ import annotations

import statistics
import sys
import time

SPAN = {"tool": "lookup_order", "status": "ok", "name": "execute_tool lookup_order",
        "args": {"order_id": "A-1234", "limit": 5, "query": "select * from orders"}}
RULES = [
    'span.tool == "issue_refund" && double(span.args.amount) > 500.0',
    'span.tool == "run_sql" && string(span.args.query).matches("(?i)drop\\\\s+table")',
    'span.status == "error" && span.name.startsWith("execute_tool")',
    'span.tool == "lookup_order" && int(span.args.limit) > 50',
    'span.tool.startsWith("delete_")',
]
STRETCH = [dict(SPAN, tool=("" if i < 6 else "lookup_order")) for i in range(16)]
COMBINED = "spans.exists(span, " + " || ".join(f"({r})" for r in RULES) + ")"
MATCHES = 'span.name.matches("(?i)drop\\\\s+table")'


def timed(fn, n: int) -> float:
    fn()
    runs = []
    for _ in range(5):
        t = time.process_time()
        for _ in range(n):
            fn()
        runs.append((time.process_time() - t) / n * 1e6)
    return statistics.median(runs)


def google() -> dict[str, float] | None:
    try:
        from cel_expr_python import cel
    except ImportError:
        return None
    t = cel.Type
    span = t.Map(t.STRING, t.DYN)
    env = cel.NewEnv(variables={"span": span, "spans": t.List(span)})
    one = [env.compile(r) for r in RULES]
    combined, matches = env.compile(COMBINED), env.compile(MATCHES)

    def five():
        act = env.Activation({"span": SPAN})
        return [e.eval(act) for e in one]

    return {"five rules, one span": timed(five, 2000),
            "one program, 16 spans": timed(lambda: combined.eval(env.Activation({"spans": STRETCH})), 1000),
            "matches(), one span": timed(lambda: matches.eval(env.Activation({"span": SPAN})), 2000)}


def interpreter_wheel() -> dict[str, float] | None:
    try:
        import cel
        cel.compile
    except (ImportError, AttributeError):
        return None
    one = [cel.compile(r) for r in RULES]
    combined, matches = cel.compile(COMBINED), cel.compile(MATCHES)

    def five():
        ctx = cel.Context({"span": SPAN})
        return [p.execute(ctx) for p in one]

    return {"five rules, one span": timed(five, 2000),
            "one program, 16 spans": timed(lambda: combined.execute({"spans": STRETCH}), 300),
            "matches(), one span": timed(lambda: matches.execute({"span": SPAN}), 300)}


def celpy() -> dict[str, float] | None:
    try:
        import celpy as cp
    except ImportError:
        return None
    env = cp.Environment()
    one = [env.program(env.compile(r)) for r in RULES]
    combined = env.program(env.compile(COMBINED))
    return {"five rules, one span": timed(lambda: [p.evaluate({"span": cp.json_to_cel(SPAN)}) for p in one], 50),
            "one program, 16 spans": timed(lambda: combined.evaluate({"spans": cp.json_to_cel(STRETCH)}), 20)}


def main() -> int:
    rows = {"cel-expr-python (cel-cpp)": google(), "common-expression-language (cel crate)": interpreter_wheel(),
            "cel-python (pure Python)": celpy()}
    cols = ["five rules, one span", "one program, 16 spans", "matches(), one span"]
    print(f"{'CPU us':<40}" + "".join(f"{c:>24}" for c in cols))
    for name, got in rows.items():
        if got is None:
            print(f"{name:<40}{'not installed':>24}")
            continue
        print(f"{name:<40}" + "".join(f"{got[c]:>24.1f}" if c in got else f"{'-':>24}" for c in cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
