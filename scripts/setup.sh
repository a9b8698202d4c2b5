#!/usr/bin/env bash
# Installs what faultgate-stream and its tests need, idempotently: a fresh machine gets
# everything, a machine that already has it spends seconds. Used by the README's commands
# and by .ci/run.
#
#   bash scripts/setup.sh                 the package, the test extras and the real peers
#                                         (Prometheus, a collector built with Go, helm)
#   bash scripts/setup.sh --package-only  the package alone, into .venv: all that `demo`,
#                                         `serve`, `check` and `replay` need (Python, and
#                                         Rust's cargo for the compiled reader)
set -euo pipefail
cd "$(dirname "$0")/.."

# The package's compiled reader (native/, faultgate_stream._native) is built by cargo
# through maturin, its build backend, with pyo3 from crates.io. rustup installs cargo in
# ~/.cargo/bin, which a non-login shell may not have on PATH.
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo is not installed; the package's compiled OTLP reader (native/) needs Rust:" \
       "install it with rustup (https://rustup.rs), then run this again" >&2
  exit 2
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# pip compiles a wheel's modules when it installs them; an editable install leaves that
# to the first import, which writes nothing when PYTHONDONTWRITEBYTECODE is set, and then
# every start compiles the package again (~110 ms, measured, of a `check` of one file).
# A module edited since is recompiled from its newer source, never run stale.
compile_package() { .venv/bin/python -m compileall -q faultgate_stream >/dev/null; }
# The compiled module is built with a profile of its own workload when one can be made
# (scripts/native_profile.sh: rustup's llvm-tools, cached under ~/.cache/faultgate-stream).
profile=$(bash scripts/native_profile.sh)
if [ -n "$profile" ]; then
  export RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }-Cprofile-use=$profile"
fi
if [ "${1:-}" = "--package-only" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e .
  compile_package
  exit 0
fi
# pip's own cache (~/.cache/pip) makes a second install quick; --upgrade-strategy keeps
# what is already there when it satisfies pyproject's lower bounds.
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
compile_package
# The real peers the end-to-end tests talk to: Debian's Prometheus, an OpenTelemetry
# Collector built from the Go module proxy and helm (cached under ~/.cache/faultgate-stream).
bash scripts/install_peers.sh
# Debian's chromium, for the HTML report's test (tests/cli/test_html_report.py)
bash scripts/install_browser.sh >/dev/null
