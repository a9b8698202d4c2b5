"""receive: OTLP/gRPC and OTLP/HTTP in; the only place that turns errors into statuses."""
