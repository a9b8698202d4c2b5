"""export/stream: every verdict, redacted, to live gRPC subscribers (VerdictService/Subscribe), each bounded."""
