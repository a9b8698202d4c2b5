"""The conformance corpus generator. Runs only in tests/conformance/.venv (see ../README.md);
the main suite never imports it."""
