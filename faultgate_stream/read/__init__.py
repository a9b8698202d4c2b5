"""read: spans in any convention or file format -> ``SpanRecord``.

The conventions (native/core/src/read/conventions.rs, exported as ``conventions.build_span``)
are the single place that knows OTel GenAI (old and new shapes), OpenInference and
OpenLLMetry. The OTLP protobuf and OTLP/JSON readers build their records there straight
from the bytes; every other source (vendor exports, GenAI log events) hands
``build_span`` a span's basic fields and its attributes as plain values.
"""
