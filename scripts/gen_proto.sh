#!/usr/bin/env bash
# Regenerates the verdict stream's Python code from proto/ (see proto/README.md).
#
#   scripts/gen_proto.sh [OUT]    OUT defaults to faultgate_stream/export/stream/gen;
#                                 a relative OUT is taken from the repo root.
#
# The output depends only on proto/ and the installed grpcio-tools version, so
# tests/export/test_stream.py can rerun this into a temporary folder and require the
# committed files byte for byte. PYTHON picks the interpreter (default: .venv's).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-.venv/bin/python}
OUT=${1:-faultgate_stream/export/stream/gen}
PROTO=faultgate/stream/v1/verdict.proto

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Messages only: the service side is a generic handler (export/stream/sink.py) and the
# Python client is export/stream/client.py, so grpcio-tools' servicer base class, whose
# methods only raise "not implemented", is not generated into the package.
"$PY" -m grpc_tools.protoc -Iproto --python_out="$work" --pyi_out="$work" "proto/$PROTO"

# protoc lays files out by proto package (faultgate/stream/v1/); we keep them flat in one
# package. The descriptor keeps its proto path, so the wire names (faultgate.stream.v1.*)
# are unchanged.
mkdir -p "$OUT"
cp "$work"/faultgate/stream/v1/verdict_pb2.py "$work"/faultgate/stream/v1/verdict_pb2.pyi "$OUT"/
printf '%s\n' '"""Generated from proto/faultgate/stream/v1/verdict.proto by scripts/gen_proto.sh. Do not edit."""' \
  >"$OUT"/__init__.py
