"""export/metrics: verdicts and self-telemetry as Prometheus metrics, with trace exemplars."""
