"""The durable source: OTLP spans consumed from Kafka topics written by the collector's
Kafka exporter, with offsets committed only once what they carried is decided and exported."""
