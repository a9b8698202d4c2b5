"""The scenarios every family plays, and the truth each one has by construction.

A scenario is a model script (what the scripted model answers, turn by turn) and the
behaviour of the tools in that run. ``fires`` is the set of built-in checks whose failure
mode the script enacts: it is what the run *is*, decided here, never read back from the
engine. Look-alikes of each failure are scenarios of their own with ``fires = ()``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .scripted_model import Script, Turn, call, calls, say


class ToolFailure(RuntimeError):
    """What a scripted tool raises: the framework reports it as it reports any tool error."""


Behaviour = Callable[[int, dict[str, Any]], str]  # (nth call of this tool, arguments) -> result


def returns(text: str) -> Behaviour:
    return lambda n, args: text


def sequence(*texts: str) -> Behaviour:
    return lambda n, args: texts[min(n, len(texts) - 1)]


def fails(message: str, then: str | None = None) -> Behaviour:
    def behave(n: int, args: dict[str, Any]) -> str:
        if then is None or n == 0:
            raise ToolFailure(message)
        return then
    return behave


@dataclass(frozen=True)
class Scenario:
    name: str
    prompt: str
    turns: tuple[Turn, ...]
    tools: dict[str, Behaviour]
    fires: tuple[str, ...] = ()
    tail: Callable[[int], Turn] | None = None
    # what the run needs from a framework: "budget" (its own step limit ends the run),
    # "nested" (a sub-agent), "parallel" (several calls in one model turn)
    needs: frozenset[str] = field(default_factory=frozenset)
    # truth for the opt-in ``loop`` check (not in ``fires``, which is the built-in checks')
    loops: bool = False
    # the session the run belongs to (``needs`` "session": the instrumentation writes
    # ``session.id``), and whether the session budget of ``SESSION_POLICY`` fires on it
    session: str = ""
    over_session_budget: bool = False

    def script(self) -> Script:
        return Script(list(self.turns), self.tail)


class World:
    """The tools' state during one run: which scenario, how often each tool was called."""

    def __init__(self) -> None:
        self.scenario: Scenario | None = None
        self.counts: dict[str, int] = {}

    def start(self, scenario: Scenario) -> None:
        self.scenario, self.counts = scenario, {}

    def call(self, tool: str, **args: Any) -> str:
        assert self.scenario is not None
        behave = self.scenario.tools.get(tool)
        if behave is None:
            raise ToolFailure(f"tool {tool} is not part of scenario {self.scenario.name}")
        n = self.counts.get(tool, 0)
        self.counts[tool] = n + 1
        return behave(n, args)


WORLD = World()


# The tools, as plain typed Python functions each framework wraps in its own tool type.
def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: The city name.
    """
    return WORLD.call("get_weather", city=city)


def search_docs(query: str) -> str:
    """Search the help-centre articles; returns a JSON list of matches.

    Args:
        query: What to search for.
    """
    return WORLD.call("search_docs", query=query)


def read_file(path: str) -> str:
    """Read a file from the workspace.

    Args:
        path: The file path.
    """
    return WORLD.call("read_file", path=path)


def job_status(job_id: str) -> str:
    """Status of a batch job.

    Args:
        job_id: The job id.
    """
    return WORLD.call("job_status", job_id=job_id)


def fetch_invoice(invoice_id: str) -> str:
    """Fetch an invoice by id.

    Args:
        invoice_id: The invoice id.
    """
    return WORLD.call("fetch_invoice", invoice_id=invoice_id)


def get_orders(customer: str) -> str:
    """Open orders of a customer; returns a JSON list.

    Args:
        customer: The customer id.
    """
    return WORLD.call("get_orders", customer=customer)


def issue_refund(customer_id: str, amount: float) -> str:
    """Refund an amount to a customer.

    Args:
        customer_id: The customer id.
        amount: The amount in EUR.
    """
    return WORLD.call("issue_refund", customer_id=customer_id, amount=amount)


TOOLS = [get_weather, search_docs, read_file, job_status, fetch_invoice, get_orders, issue_refund]

# The windowed budget the session scenarios enact (issue 13): refunds per customer per
# session add up to at most 1000 EUR a day.
SESSION_POLICY = {"limits": [{"tool": "issue_refund", "arg": "amount", "sum": True, "max": 1000,
                              "within": "24h", "per": "session", "by": "customer_id"}]}

WEATHER = returns("18C, sunny, wind 10 km/h")
INVOICE_DOWN = "invoice service unavailable (HTTP 503)"


def _search_tail(i: int) -> Turn:
    return call("search_docs", query=f"refund policy for order class {i}")


SCENARIOS = [
    Scenario("clean_answer", "What is the weather in Paris?",
             (call("get_weather", city="Paris"), say("It is 18C and sunny in Paris, with a light wind.")),
             {"get_weather": WEATHER}),
    Scenario("empty_result_is_the_answer", "Does customer C-17 have open orders?",
             (call("get_orders", customer="C-17"), say("Customer C-17 has no open orders.")),
             {"get_orders": returns("[]")}),
    Scenario("abstention", "When is flight LX 318 expected to land?",
             (call("search_docs", query="flight LX 318 arrival"),
              say("I couldn't find any information about flight LX 318.")),
             {"search_docs": returns("[]")}, fires=("abstention",)),
    Scenario("policy_path_traversal", "Show me the account list on the server.",
             (call("read_file", path="../../etc/passwd"), say("The file lists the root and daemon accounts.")),
             {"read_file": returns("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/bin/false")},
             fires=("policy",)),
    Scenario("relative_path_is_fine", "What does the install guide say?",
             (call("read_file", path="docs/install.md"), say("The guide says to install it with pip.")),
             {"read_file": returns("# Install\n\nRun pip install widget.")}),
    Scenario("repeated_call", "Is batch job 42 finished?",
             (call("job_status", job_id="42"), call("job_status", job_id="42"), call("job_status", job_id="42"),
              say("Job 42 is still pending.")),
             {"job_status": returns("status: pending")}, fires=("repeated_call",), loops=True),
    Scenario("polling_with_changing_results", "Wait for batch job 42 and tell me when it is done.",
             (call("job_status", job_id="42"), call("job_status", job_id="42"), call("job_status", job_id="42"),
              say("Job 42 has finished.")),
             {"job_status": sequence("status: queued", "status: running (40%)", "status: done")}),
    Scenario("unrecovered_tool_error", "How much is invoice INV-9?",
             (call("fetch_invoice", invoice_id="INV-9"),
              say("The invoice system did not respond, so I have no amount for INV-9 yet.")),
             {"fetch_invoice": fails(INVOICE_DOWN)}, fires=("unrecovered_tool_error",)),
    Scenario("error_retried_successfully", "How much is invoice INV-9?",
             (call("fetch_invoice", invoice_id="INV-9"), call("fetch_invoice", invoice_id="INV-9"),
              say("Invoice INV-9 is 120.00 EUR and has been paid.")),
             {"fetch_invoice": fails(INVOICE_DOWN, then="INV-9: 120.00 EUR, paid")}),
    # The look-alike that must NOT count as recovered: another tool worked afterwards.
    Scenario("error_then_a_different_tool", "How much is invoice INV-9?",
             (call("fetch_invoice", invoice_id="INV-9"), call("get_orders", customer="C-17"),
              say("Order O-1 of customer C-17 totals 120.00 EUR.")),
             {"fetch_invoice": fails(INVOICE_DOWN), "get_orders": returns('[{"id": "O-1", "total": "120.00 EUR"}]')},
             fires=("unrecovered_tool_error",)),
    Scenario("context_overflow", "Describe the weather in Paris in detail.",
             (call("get_weather", city="Paris"), say("It is 18C and sunny in Paris. The wind comes from the",
                                                     finish_reason="length")),
             {"get_weather": WEATHER}, fires=("context_overflow",)),
    Scenario("parallel_tool_calls", "Compare the weather in Paris and Rome.",
             (calls(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})),
              say("Both Paris and Rome are at 18C and sunny.")),
             {"get_weather": WEATHER}, needs=frozenset({"parallel"})),
    # Loops faultgate's exact-repeat rule misses: the opt-in ``loop`` check's cases.
    Scenario("ping_pong_between_two_tools", "What is our refund window?",
             (call("search_docs", query="refund window"), call("read_file", path="docs/refunds.md"),
              call("search_docs", query="refund window"), call("read_file", path="docs/refunds.md"),
              say("Refunds are accepted within 30 days of delivery.")),
             {"search_docs": returns('[{"path": "docs/refunds.md", "title": "Refunds"}]'),
              "read_file": returns("# Refunds\n\nRefunds are accepted within 30 days of delivery.")}, loops=True),
    Scenario("repeat_with_equivalent_arguments", "What is the weather in Paris?",
             (call("get_weather", city="Paris"), call("get_weather", city="paris"), call("get_weather", city="PARIS"),
              say("It is 18C and sunny in Paris, with a light wind.")),
             {"get_weather": WEATHER}, loops=True),
    # A session budget across runs (played in this order): 600 then 450 EUR to C-1 in one
    # session is over 1000; the same 450 in another session is not.
    Scenario("refund_first_in_session", "Refund 600 EUR to customer C-1.",
             (call("issue_refund", customer_id="C-1", amount=600), say("I refunded 600 EUR to customer C-1.")),
             {"issue_refund": returns("refunded 600.00 EUR to C-1")}, session="sess-A",
             needs=frozenset({"session"})),
    Scenario("refund_second_in_session_over_budget", "Refund another 450 EUR to customer C-1.",
             (call("issue_refund", customer_id="C-1", amount=450), say("I refunded 450 EUR to customer C-1.")),
             {"issue_refund": returns("refunded 450.00 EUR to C-1")}, session="sess-A",
             needs=frozenset({"session"}), over_session_budget=True),
    Scenario("refund_in_another_session", "Refund 450 EUR to customer C-1.",
             (call("issue_refund", customer_id="C-1", amount=450), say("I refunded 450 EUR to customer C-1.")),
             {"issue_refund": returns("refunded 450.00 EUR to C-1")}, session="sess-B",
             needs=frozenset({"session"})),
    Scenario("step_budget_search_loop", "Find our refund policy for damaged goods.",
             (), {"search_docs": returns("[]")}, fires=("search_loop",), tail=_search_tail,
             needs=frozenset({"budget"})),
]

NESTED = Scenario(
    "nested_agent", "Ask the weather specialist about Paris.",
    (call("weather_specialist", input="What is the weather in Paris?"),  # the outer agent's turn
     call("get_weather", city="Paris"), say("18C and sunny."),           # the inner agent's turns
     say("The weather specialist says Paris is at 18C and sunny.")),     # the outer agent again
    {"get_weather": WEATHER}, needs=frozenset({"nested"}))
SCENARIOS.append(NESTED)

# Multi-agent and framework-control runs (issue 35), each played by the families whose framework
# does it natively. HAND_OFF stands for the framework's own hand-off call (its tool name and
# arguments differ: transfer_to_<agent>, handoff_to_agent, transfer_to_agent, handoff): the
# family's ``hand_off`` turns it into that call.
HAND_OFF = "__hand_off__"
INVOICE_PAID = "INV-9: 120.00 EUR, paid"
SCENARIOS += [
    Scenario("hand_off_to_a_specialist", "I need the weather in Paris; please pass me to the weather desk.",
             (call(HAND_OFF, to="weather_specialist"),
              call("get_weather", city="Paris"), say("It is 18C and sunny in Paris.")),
             {"get_weather": WEATHER}, needs=frozenset({"handoff"})),
    Scenario("hand_off_then_the_specialist_fails", "How much is invoice INV-9? Please pass me to billing.",
             (call(HAND_OFF, to="billing_specialist"),
              call("fetch_invoice", invoice_id="INV-9"),
              say("The invoice system did not respond, so I have no amount for INV-9 yet.")),
             {"fetch_invoice": fails(INVOICE_DOWN)}, fires=("unrecovered_tool_error",), needs=frozenset({"handoff"})),
    Scenario("supervisor_with_two_workers", "What is the weather in Paris, and does customer C-17 have open orders?",
             (call("weather_specialist", input="What is the weather in Paris?"),
              call("get_weather", city="Paris"), say("18C and sunny."),
              call("orders_specialist", input="Does customer C-17 have open orders?"),
              call("get_orders", customer="C-17"), say("C-17 has no open orders."),
              say("Paris is at 18C and sunny, and customer C-17 has no open orders.")),
             {"get_weather": WEATHER, "get_orders": returns("[]")}, needs=frozenset({"supervisor"})),
    Scenario("worker_fails_and_the_supervisor_answers", "How much is invoice INV-9? Ask the billing worker.",
             (call("billing_specialist", input="How much is invoice INV-9?"),
              call("fetch_invoice", invoice_id="INV-9"),
              say("The invoice system did not respond, so I have no amount for INV-9."),
              say("The billing worker reports the invoice system did not respond, so INV-9 has no amount yet.")),
             {"fetch_invoice": fails(INVOICE_DOWN)}, fires=("unrecovered_tool_error",),
             needs=frozenset({"supervisor"})),
    # The framework itself re-runs a tool that raised (its retry policy, not the model):
    # the first run fails, the second returns; recovered, so clean.
    Scenario("tool_retried_by_the_framework", "How much is invoice INV-9?",
             (call("fetch_invoice", invoice_id="INV-9"), say("Invoice INV-9 is 120.00 EUR and has been paid.")),
             {"fetch_invoice": fails(INVOICE_DOWN, then=INVOICE_PAID)}, needs=frozenset({"retry"})),
    # Streamed responses: the same answer and the same cut-off, arriving as chunks.
    Scenario("streamed_answer", "What is the weather in Paris?",
             (call("get_weather", city="Paris"), say("It is 18C and sunny in Paris, with a light wind.")),
             {"get_weather": WEATHER}, needs=frozenset({"stream"})),
    Scenario("streamed_context_overflow", "Describe the weather in Paris in detail.",
             (call("get_weather", city="Paris"), say("It is 18C and sunny in Paris. The wind comes from the",
                                                     finish_reason="length")),
             {"get_weather": WEATHER}, fires=("context_overflow",), needs=frozenset({"stream"})),
]

# The agents a supervisor delegates to, or hands off to: each with its one tool.
WORKERS = {"weather_specialist": get_weather, "orders_specialist": get_orders, "billing_specialist": fetch_invoice}

BY_NAME = {s.name: s for s in SCENARIOS}
MULTI_AGENT = frozenset({"nested", "handoff", "supervisor"})
BUILT_IN_CHECKS = ("search_loop", "abstention", "policy", "repeated_call", "unrecovered_tool_error",
                   "context_overflow")
