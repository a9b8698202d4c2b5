"""A Python client of the verdict stream (other languages generate theirs from proto/).

    stub = VerdictServiceStub(grpc.insecure_channel("faultgate-stream:4317"))
    for verdict in stub.Subscribe(SubscribeRequest(agents=["support-*"], only_failed=True)):
        ...
"""
from __future__ import annotations

import grpc

from faultgate_stream.export.stream.gen.verdict_pb2 import SubscribeRequest, Verdict

SUBSCRIBE = "/faultgate.stream.v1.VerdictService/Subscribe"


class VerdictServiceStub:
    """The same surface as a grpcio-tools stub: ``Subscribe(request, **call_options)``."""

    def __init__(self, channel: grpc.Channel) -> None:
        self.Subscribe = channel.unary_stream(SUBSCRIBE, request_serializer=SubscribeRequest.SerializeToString,
                                              response_deserializer=Verdict.FromString)
