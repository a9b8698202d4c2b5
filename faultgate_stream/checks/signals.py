"""What tool results and spans say about failure, shared by several checks.

The heuristics are faultgate 0.4.1's, so the two tools agree on what an error or an
empty result is. They are compiled (native/core/src/checks/signals.rs), as the default checks
that read them are; tests/checks/checks_oracle.py keeps the Python they replaced, and
tests/checks/test_native_signals.py holds the two equal.

- ``structural_error(result)``: why a tool result is an error ("" when it is not): a JSON
  ``error`` field (quoted whole for masking, cut to 80 characters), a non-zero exit code
  (``exit_code``, ``return_code``, ``exitcode``, ``returncode``, ``exit_status``), a
  ``<tool_use_error>`` tag, or an error prefix (``Error:``, ``ERROR:``, a traceback, a
  tool-argument parse error). JSON is the result itself, or for a list of
  ``{"text": "{...}"}`` parts (MCP content), each part's text.
- ``step_errors(run)``: ``structural_error`` of each step's result, in step order, worked
  out once per run (kept in ``run.derived``) for every check that asks.
- ``empty_result(result)``: a tool result that carried nothing back: empty, ``[]``,
  ``{}``, ``null``, ``None``, or a JSON body whose count (``n_candidates``, ``count``,
  ``n_results``, ``total``) is 0 or whose lists are all empty.
- ``span_error(span)``: why the span itself says it failed ("" when it does not).
- ``squash(s)``: white space folded, ``" ".join(s.split())``: two results that differ
  only in layout are the same result.
- ``canonical_arguments(args)``: arguments in one canonical form, so the same call written
  twice compares equal: JSON as ``json.JSONEncoder(sort_keys=True, separators=(",", ":"),
  ensure_ascii=False)`` writes it, other text with each run of white space one blank.
"""
from __future__ import annotations

from faultgate_stream._native import (  # noqa: F401  (re-exported)
    canonical_arguments, empty_result, span_error, squash, step_errors, structural_error,
)
