"""export/log: one structured JSON line per verdict, reasons redacted."""
