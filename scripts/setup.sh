#!/usr/bin/env bash
# Installs what faultgate-stream and its tests need, idempotently: a fresh machine gets
# everything, a machine that already has it spends seconds. Used by the README's commands
# and by .ci/run.
#
#   bash scripts/setup.sh                 the package, the test extras and the real peers
#                                         (Prometheus, a collector built with Go, helm)
#   bash scripts/setup.sh --package-only  the package alone, into .venv: all that `demo`,
#                                         `serve`, `check` and `replay` need (Python only)
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
if [ "${1:-}" = "--package-only" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e .
  exit 0
fi
# pip's own cache (~/.cache/pip) makes a second install quick; --upgrade-strategy keeps
# what is already there when it satisfies pyproject's lower bounds.
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
# The real peers the end-to-end tests talk to: Debian's Prometheus, an OpenTelemetry
# Collector built from the Go module proxy and helm (cached under ~/.cache/faultgate-stream).
bash scripts/install_peers.sh
