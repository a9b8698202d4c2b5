"""export/query: recent verdicts in a bounded ring, served read-only as /api/v1 on the metrics endpoint (and to MCP tools through it)."""
