"""Generated from proto/faultgate/stream/v1/verdict.proto by scripts/gen_proto.sh. Do not edit."""
