"""tau2-bench simulation results (``tau2 run ... --save-to results.json``) -> spans.

A results file is ``{"info": ..., "tasks": [...], "simulations": [...]}``; a simulation
(``SimulationRun``) has ``id``, ``task_id``, ``trial``, ``start_time`` / ``end_time`` (ISO),
``termination_reason`` (``user_stop``, ``agent_stop``, ``max_steps``, ``too_many_errors``,
``context_window_exceeded``, ...), ``reward_info.reward`` and ``messages``: ``user`` /
``assistant`` messages with ``content`` and ``tool_calls`` (``{id, name, arguments,
requestor}``), ``tool`` messages answering a call by ``id`` with ``content`` and ``error``.

Each simulation is one run: a synthesized ``invoke_agent`` root (the task id is the
scenario, the first user message the prompt, the last assistant text the answer, the
termination reason ``faultgate.termination``, a reward of 1 or 0 ``faultgate.outcome``),
and one tool span per call the agent made (the user simulator's own calls, in domains
where the user has tools, are not the agent's steps).
"""
from __future__ import annotations

import hashlib
from typing import Any

from faultgate_stream.model.errors import InputError
from faultgate_stream.model.records import SpanRecord
from faultgate_stream.read import payload
from faultgate_stream.read.formats.shared import agent_root, objects, strictly_increasing, to_ns, tool_span
from faultgate_stream.read.ids import TRACE_ID_BYTES, hex_id

SIGNATURE = frozenset({"simulations", "tasks", "info", "task_id", "termination_reason", "reward_info", "messages",
                       "trial"})
NEEDS = (("simulations",), ("simulations.messages",), ("simulations.task_id", "simulations.termination_reason"))


def _simulations(doc: Any) -> list[Any]:
    sims = doc.get("simulations") if isinstance(doc, dict) else None
    return sims if isinstance(sims, list) else []


def detect(doc: Any) -> bool:
    sims = _simulations(doc)
    first = sims[0] if sims else None
    return isinstance(first, dict) and "messages" in first and ("task_id" in first or "termination_reason" in first)


def read(doc: Any) -> list[SpanRecord]:
    out: list[SpanRecord] = []
    for i, sim in enumerate(objects(_simulations(doc), "simulations")):
        out += _simulation(sim, f"simulations[{i}]")
    return out


def _trace_id(sim: dict[str, Any]) -> str:
    raw = str(sim.get("id") or "")
    h = hex_id(raw.replace("-", ""), TRACE_ID_BYTES) if raw else None
    if h is not None:
        return h  # a uuid: its 32 hex digits
    return hashlib.sha256(f"tau2/{raw}/{sim.get('task_id')}/{sim.get('trial')}".encode()).hexdigest()[:32]


def _answer(msgs: list[dict[str, Any]]) -> str:
    """The agent's last words, when they came after its last tool call: a run cut off at its
    step budget mid-search has no answer, however it greeted the user at the start."""
    for m in reversed(msgs):
        if m.get("role") == "tool" or (m.get("role") == "assistant" and m.get("tool_calls")):
            return ""
        if m.get("role") == "assistant" and m.get("content"):
            return str(m["content"])
    return ""


def _time(v: Any, where: str) -> int:
    try:
        return to_ns(v)
    except ValueError as e:
        raise InputError(f"{where}: {e}") from None


def _simulation(sim: dict[str, Any], where: str) -> list[SpanRecord]:
    msgs = sim.get("messages")
    if not isinstance(msgs, list):
        raise InputError(f"{where}.messages: expected a list")
    msgs = objects(msgs, f"{where}.messages")
    tid = _trace_id(sim)
    root_id = tid[:16]
    start = _time(sim.get("start_time"), f"{where}.start_time")
    end = _time(sim.get("end_time"), f"{where}.end_time")
    # a microsecond apart at least, so a message's calls (a nanosecond apart) stay before the next message
    times = [t * 1000 for t in strictly_increasing(
        [(_time(m.get("timestamp"), f"{where}.messages[{j}].timestamp") or start) // 1000 for j, m in enumerate(msgs)])]
    results = {str(m.get("id")): m for m in msgs if m.get("role") == "tool" and m.get("id")}
    prompt = next((m.get("content") for m in msgs if m.get("role") == "user" and m.get("content")), "")
    answer = _answer(msgs)
    spans: list[SpanRecord] = []
    n = 0
    for j, m in enumerate(msgs):
        if m.get("role") != "assistant":
            continue
        calls = m.get("tool_calls") or []
        if not isinstance(calls, list):
            raise InputError(f"{where}.messages[{j}].tool_calls: expected a list")
        for k, c in enumerate(calls):
            if not isinstance(c, dict) or not c.get("name"):
                raise InputError(f"{where}.messages[{j}].tool_calls[{k}]: expected a call with a name")
            if c.get("requestor", "assistant") != "assistant":
                continue
            n += 1
            res = results.get(str(c.get("id") or ""))
            failed = bool(res.get("error")) if res else False
            spans.append(tool_span(tid, f"{root_id[:8]}{n:08x}", root_id, str(c["name"]), times[j] + k, times[j] + k + 1,
                                   c.get("arguments"), res.get("content") if res else None, ok=not failed,
                                   call_id=str(c.get("id") or "")))
    reward = (sim.get("reward_info") or {}).get("reward") if isinstance(sim.get("reward_info"), dict) else None
    attrs: dict[str, Any] = {}
    if sim.get("termination_reason"):
        attrs["faultgate.termination"] = str(sim["termination_reason"])
    if isinstance(reward, (int, float)) and not isinstance(reward, bool):
        attrs["faultgate.outcome"] = "true" if reward >= 1 else "false"
    root = agent_root(tid, root_id, "tau2-agent", start, end or (times[-1] if times else start),
                      prompt=payload.plain_text(prompt), answer=payload.plain_text(answer),
                      metadata={"scenario": str(sim.get("task_id") or "")}, attrs=attrs)
    return [root, *spans]
