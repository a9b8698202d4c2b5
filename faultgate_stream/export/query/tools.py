"""MCP tools over the verdict API, for coding assistants and agent developers asking "why
did run X fail?": ``recent_failures``, ``explain_run`` and ``gate_status``.

Served over stdio by ``faultgate-stream mcp`` with the official MCP SDK (``mcp`` 2.x,
``MCPServer``). The tools read the API only (``client.py``): they see what any API client
sees, masked reasons included, and change nothing. A refusal from the API (a bad token, a
run not kept) is a tool error carrying the API's message, for the model to read.
"""
from __future__ import annotations

from typing import Any

from faultgate_stream.export.query.client import ApiError, VerdictApi

INSTRUCTIONS = (
    "faultgate-stream checks AI-agent runs (OpenTelemetry traces) for known failure modes. "
    "recent_failures lists the latest failed runs and the checks that fired; explain_run gives one run's "
    "verdict with each check's reason and the steps it points at; gate_status says whether each agent "
    "version's clean rate is within its baseline band. Reasons are masked for personal data and secrets."
)
# What a tool returns at most: an assistant reads it, and a long list is noise to it.
MAX_FAILURES = 50


def _finding(f: dict[str, Any]) -> str:
    at = f" at step(s) {', '.join(map(str, f['steps']))}" if f.get("steps") else ""
    return f"{f['check']} ({f['severity']}){at}: {f['reason']}"


def explanation(run: dict[str, Any]) -> str:
    """One run's verdict in sentences, from its API record."""
    who = run["agent"] + (f" {run['agent_version']}" if run.get("agent_version") else "")
    lines = [f"Run {run['run_id']} of agent {who}: {run['verdict']} ({run['completion']}, "
             f"{run['steps']} steps, {run['spans']} spans)."]
    if run["fired"]:
        lines += ["Checks that fired:"] + [f"- {_finding(f)}" for f in run["fired"]]
    if run["undecided"]:
        lines += ["Checks that could not see their input (undecided, not passed):"] + [
            f"- {u['check']}: {u['reason']}" for u in run["undecided"]]
    if run.get("early"):
        lines += ["Found before the run ended:"] + [f"- {e['check']} at span {e['span_id']}: {e['reason']}"
                                                     for e in run["early"]]
    if run["passed"]:
        lines.append(f"Passed: {', '.join(run['passed'])}.")
    if run.get("revision"):
        rev = run["revision"]
        lines.append(f"Amended (revision {rev['revision']}, was {rev['previous']}, by {rev['amended_by']}).")
    return "\n".join(lines)


def server(api: VerdictApi):
    """The MCP server with the three tools, over ``api``."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    from faultgate_stream import __version__

    app = MCPServer("faultgate-stream", instructions=INSTRUCTIONS, version=__version__)
    read_only = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)

    def ask(call, *args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return call(*args, **kwargs)
        except ApiError as e:
            raise ToolError(str(e)) from None

    @app.tool(annotations=read_only)
    def recent_failures(agent: str | None = None, check: str | None = None, since: str | None = None,
                        limit: int = 20) -> dict[str, Any]:
        """The most recent failed agent runs, newest first, each with the checks that fired and why.

        agent: only this agent's runs. check: only runs on which this check fired (e.g. policy,
        unrecovered_tool_error). since: an RFC 3339 time, Unix seconds, or a duration such as 15m
        (that long ago). limit: at most this many runs (1-50)."""
        if not 1 <= limit <= MAX_FAILURES:
            raise ToolError(f"limit: must be between 1 and {MAX_FAILURES}, not {limit}")
        doc = ask(api.verdicts, verdict="failed", agent=agent, check=check, since=since, limit=limit)
        failures = [{"trace_id": r["trace_id"], "run_id": r["run_id"], "agent": r["agent"],
                     "agent_version": r["agent_version"], "decided_time": r["decided_time"],
                     "fired": [{"check": f["check"], "severity": f["severity"], "reason": f["reason"],
                                "steps": f["steps"]} for f in r["fired"]]}
                    for r in doc["verdicts"]]
        return {"failures": failures, "matched": doc["matched"], "kept_verdicts": doc["ring"]["verdicts"]}

    @app.tool(annotations=read_only)
    def explain_run(trace_id: str) -> dict[str, Any]:
        """Why a run got its verdict: each check that fired with its reason and the steps it points
        at, the checks that could not see their input, and those that passed. trace_id: the run's
        OpenTelemetry trace id (32 hex digits)."""
        doc = ask(api.run, trace_id)
        return {"trace_id": doc["trace_id"], "explanation": "\n\n".join(explanation(r) for r in doc["runs"]),
                "runs": doc["runs"]}

    @app.tool(annotations=read_only)
    def gate_status(agent: str | None = None) -> dict[str, Any]:
        """The live gate per agent and version: PASS / FAIL / INCONCLUSIVE, the clean rate of the
        recent window against the baseline band, the thresholds and the p-value. agent: only
        this agent."""
        doc = ask(api.gate)
        windows = [w for w in doc["windows"] if agent is None or w["agent"] == agent]
        return {"configured": doc["configured"], "windows": windows}

    return app
