"""Luck Rate live: runs carrying an outcome are counted by outcome and by path, so the
share of passing runs whose path was not clean is one PromQL division."""
from __future__ import annotations

import dataclasses

from faultgate_stream.checks.config import ChecksConfig
from faultgate_stream.checks.registry import RULES
from tests.live.test_receivers import _request, _span, _stub
from tests.live_service import make_config


def _run(trace: int, outcome: str, denied: bool):
    root = _span(trace, 1, gen_ai__operation__name="invoke_agent", gen_ai__agent__name="shop",
                 faultgate__outcome=outcome)
    args = '{"path": "../../etc/passwd"}' if denied else '{"id": 1}'
    call = _span(trace, 2, parent=1, name="execute_tool read", gen_ai__operation__name="execute_tool",
                 gen_ai__tool__name="read", gen_ai__tool__call__arguments=args)
    return [root, call]


def test_passing_runs_on_a_dirty_path_are_counted_as_lucky(live_service):
    enabled = tuple(c.name for c in RULES) + ("outcome",)
    live = live_service(dataclasses.replace(make_config(), checks=ChecksConfig(enabled=enabled)))
    channel, stub = _stub(live)
    spans = _run(1, "pass", denied=True) + _run(2, "pass", denied=False) + _run(3, "fail", denied=False)
    spans += _run(4, "pass", denied=True) + _run(5, "", denied=True)
    stub.Export(_request(*spans), timeout=5)
    channel.close()
    live.sink.wait_for(5)

    def n(**labels: str) -> float:
        return live.sample("faultgate_outcome_runs_total", agent="shop", **labels)

    assert n(outcome="pass", path="dirty") == 2
    assert n(outcome="pass", path="clean") == 1
    assert n(outcome="fail") == 1
    lucky = n(outcome="pass", path="dirty") / n(outcome="pass")
    assert round(lucky, 3) == 0.667
