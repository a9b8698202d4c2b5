"""policy: what the agent was allowed to do, in faultgate 0.4.1's keys and semantics.

``schema`` declares and validates the policy file; one module per key (group) judges it
(``allow``, ``deny_patterns``, ``arguments``, ``identity``, ``requires``, ``confirmation``,
``budgets``, ``complete``), reading calls through ``facts``, which decodes each call's JSON
once; ``check`` composes them into the ``policy`` check.
"""
from faultgate_stream.checks.policy.check import PolicyCheck
from faultgate_stream.checks.policy.deny_patterns import DEFAULT_DENY_PATTERNS
from faultgate_stream.checks.policy.schema import Policy, PolicyError, load_policy

__all__ = ["DEFAULT_DENY_PATTERNS", "Policy", "PolicyCheck", "PolicyError", "load_policy"]
