#!/usr/bin/env bash
# Installs what faultgate-stream and its tests need, idempotently: a fresh machine gets
# everything, a machine that already has it spends seconds. Used by the README's commands
# and by .ci/run. Each step says what it does and how long it took; long ones show their
# elapsed time (and a cargo build the crate it is on) while they run.
#
#   bash scripts/setup.sh --package-only  the package alone, into .venv: all that `demo`,
#                                         `serve`, `check` and `replay` need (Python, and
#                                         Rust's cargo for the compiled core); about a
#                                         minute on a fresh 2-core machine (bench/first_run.py)
#   bash scripts/setup.sh                 that, the test extras and the real peers the tests
#                                         talk to (scripts/install_peers.sh: Prometheus, two
#                                         collectors and helm built with Go, a Kafka broker
#                                         fetched with Maven and run on Java; then Debian's
#                                         chromium, scripts/install_browser.sh)
#   --profile-guided                      build the compiled core with a profile of its own
#                                         workload (scripts/native_profile.sh; ~2 min more
#                                         when the profile is not cached): what the benches
#                                         measure and the wheel ships; without it, a plain
#                                         release build, the same results
set -euo pipefail
cd "$(dirname "$0")/.."
STEP_NAME=setup
. scripts/steps.sh

package_only=0 profile_guided=0
for arg in "$@"; do
  case "$arg" in
    --package-only) package_only=1 ;;
    --profile-guided) profile_guided=1 ;;
    *) say "unknown option $arg (--package-only, --profile-guided)"; exit 2 ;;
  esac
done
started=$SECONDS

# The package's compiled core (native/, faultgate_stream._native) is built by cargo
# through maturin, its build backend, with pyo3 from crates.io. rustup installs cargo in
# ~/.cargo/bin, which a non-login shell may not have on PATH.
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  say "cargo is not installed; the package's compiled core (native/) needs Rust: install it with" \
      "rustup (https://rustup.rs) and run this again, or install a wheel instead (scripts/build_wheel.sh," \
      "README: Install)"
  exit 2
fi

logs=.venv/setup-logs
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  run_step "creating .venv ($("$PY" --version 2>&1), python -m venv)" "$logs/venv.log" "$PY" -m venv .venv
fi
PIP=(.venv/bin/python -m pip --disable-pip-version-check)

# What pip installs: the build backend (maturin, which the build then uses from .venv
# instead of installing it into a fresh isolated environment every time), pyproject's
# dependencies (their lower bounds) and, for the tests, the test extras. pip's own cache
# (~/.cache/pip) makes a second install quick; what is installed and satisfies the bounds stays.
mapfile -t backend < <(.venv/bin/python -c 'import tomllib
print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))')
mapfile -t requirements < <(.venv/bin/python - "$package_only" <<'EOF'
import sys, tomllib
p = tomllib.load(open("pyproject.toml", "rb"))
wanted = p["project"]["dependencies"]
if sys.argv[1] == "0":
    wanted += p["project"]["optional-dependencies"]["test"]
print("\n".join(wanted))
EOF
)
what="the package's dependencies"
[ "$package_only" = 1 ] || what="the package's dependencies and the test extras"
run_step "installing the build backend (pip: ${backend[*]})" "$logs/pip-backend.log" "${PIP[@]}" install "${backend[@]}"
install_dependencies() {
  start_step "installing $what (pip, ${#requirements[@]} requirements)" "$logs/pip-deps.log" \
    "${PIP[@]}" install "${requirements[@]}"
}

# The compiled core: a plain release build unless --profile-guided. Plain is cargo's own
# release profile (opt-level 3, 16 codegen units, crate-local LTO), not native/Cargo.toml's
# (whole-program LTO in one codegen unit), which is for what is measured and shipped: that
# one compiles the crate on one core: 53 s of CPU against 32 s spread over both cores
# (`touch native/py/src/lib.rs && time cargo build --release`, each profile), most of a first run.
# --profile-guided builds as the wheel does: Cargo.toml's profile and an instrumented build
# trained on the bundled examples (scripts/native_profile.sh, cached under
# ~/.cache/faultgate-stream/pgo by the Rust sources), which needs the dependencies first.
how="a plain release build"
if [ "$profile_guided" = 0 ]; then
  export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
else
  install_dependencies
  wait_steps
  profile_to() { bash scripts/native_profile.sh >"$1"; }
  run_step "making the build's profile (scripts/native_profile.sh: cached, else an instrumented build and its \
training, ~2 min)" "$logs/profile.log" profile_to "$logs/profile"
  profile=$(cat "$logs/profile")
  grep 'native_profile:' "$logs/profile.log" >&2 || true
  if [ -n "$profile" ]; then
    export RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }-Cprofile-use=$profile"
    how="a profile-guided release build"
  fi
fi
# -v: cargo's "Compiling <crate>" lines reach the log, so the wait shows which crate it is on.
# maturin's build backend runs the maturin program it finds on PATH: the one in .venv.
export PATH="$PWD/.venv/bin:$PATH"
start_step "building the compiled core (cargo, $how of native/) and installing the package editable" \
  "$logs/pip-package.log" "${PIP[@]}" install -v --no-deps --no-build-isolation -e .
if [ "$profile_guided" = 0 ]; then
  # Side by side with the build: pip waits on the network and the disk while cargo keeps the
  # cores busy. The two write different files: the build's install only the package's own
  # (its .pth, dist-info and command), this one only the dependencies'.
  install_dependencies
fi
wait_steps
# pip compiles a wheel's modules when it installs them; an editable install leaves that
# to the first import, which writes nothing when PYTHONDONTWRITEBYTECODE is set, and then
# every start compiles the package again (~110 ms, measured, of a `check` of one file).
# A module edited since is recompiled from its newer source, never run stale.
.venv/bin/python -m compileall -q faultgate_stream >/dev/null

if [ "$package_only" = 0 ]; then
  # The real peers the end-to-end tests talk to (cached under ~/.cache/faultgate-stream).
  bash scripts/install_peers.sh >/dev/null
  # Debian's chromium, for the HTML report's test (tests/cli/test_html_report.py); after the
  # peers, whose Prometheus install does not wait for apt's lock
  run_step "Debian's chromium (apt; the HTML report's test renders its page in it)" \
    "${FAULTGATE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/faultgate-stream}/logs/chromium.log" \
    bash scripts/install_browser.sh
fi
say "ready in $(_elapsed $((SECONDS - started)))"
