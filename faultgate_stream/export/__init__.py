"""export: sinks that render each verdict (metrics, log; spans and stream to come), each bounded."""
