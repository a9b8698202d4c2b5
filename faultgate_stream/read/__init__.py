"""read: spans in any convention or file format -> ``SpanRecord``.

``conventions.build_span`` is the single place that knows OTel GenAI (old and new
shapes), OpenInference and OpenLLMetry; every source (OTLP protobuf, OTLP/JSON, vendor
exports) hands it a span's basic fields and its attributes as plain values.
"""
