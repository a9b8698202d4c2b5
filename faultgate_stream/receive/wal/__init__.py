"""The write-ahead log (``durability.wal``): what the OTLP receivers accept is on local disk
before it is acknowledged, and a start replays what was not yet decided and exported."""
