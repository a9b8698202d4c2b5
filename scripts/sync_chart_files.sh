#!/usr/bin/env bash
# Copies the files the helm chart ships but cannot read from outside itself into
# helm/faultgate-stream/files/: the Prometheus rules and the Grafana dashboard.
# tests/deploy/test_helm.py fails when a copy differs from its source; run this after
# changing either source. A source that does not exist yet leaves its placeholder.
set -euo pipefail
cd "$(dirname "$0")/.."
FILES=helm/faultgate-stream/files
copy() {
  local src=$1 dst=$2
  if [ -f "$src" ]; then
    cp "$src" "$FILES/$dst"
    echo "sync_chart_files: $src -> $FILES/$dst"
  else
    echo "sync_chart_files: $src does not exist; $FILES/$dst stays a placeholder" >&2
  fi
}
copy deploy/prometheus/rules/faultgate-stream.rules.yaml faultgate-stream.rules.yaml
copy deploy/grafana/faultgate-stream.json faultgate-stream.json
