"""policy: what the agent was allowed to do, in faultgate 0.4.1's keys and semantics.

``schema`` declares and validates the policy file; one module per key (group) judges it
(``allow``, ``deny_patterns``, ``arguments``, ``identity``, ``requires``, ``confirmation``,
``budgets``, ``complete``), reading calls through ``facts``, which decodes each call's JSON
once; ``check`` composes them into the ``policy`` check.

The names below are imported from their modules on first use, so that importing one
module of the package (the registry imports ``check``) does not import all of them.
"""
from __future__ import annotations

import importlib
from typing import Any

__all__ = ["DEFAULT_DENY_PATTERNS", "Policy", "PolicyCheck", "PolicyError", "load_policy"]
_HOME = {"PolicyCheck": "check", "DEFAULT_DENY_PATTERNS": "deny_patterns", "Policy": "schema",
         "PolicyError": "schema", "load_policy": "schema"}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
