#!/usr/bin/env bash
# Builds the package as one abi3 manylinux_2_17 wheel (CPython 3.11+, glibc 2.17+, x86_64):
# what a user installs with pip and no Rust. maturin builds it with zig as the linker, so
# the wheel runs on glibc older than this machine's; the compiled core is profile-guided
# where a profile can be made (scripts/native_profile.sh: rustup's llvm-tools and .venv),
# else a plain release build, and says which. The bundled examples go inside the package
# (faultgate_stream/examples), so `faultgate-stream demo` runs from the wheel alone.
#
#   bash scripts/build_wheel.sh [--out DIR] [--no-profile]   build (or reuse), copy to DIR (default
#                                                            dist/), print the wheel's path last
#
# Cached like the collector in scripts/install_peers.sh: under ~/.cache/faultgate-stream/
# wheel/<key>/ (the 20 newest), keyed by every file that goes into the wheel, the profile,
# the toolchain and the build tools; a second build of the same sources costs a copy.
# Cargo's target directory is kept beside it, so a change to the Python alone rebuilds no Rust.
# Used by tests/test_wheel.py and the Dockerfile. Needs cargo, python3 >= 3.11 and PyPI
# (maturin and ziglang, installed once into a cached tools environment).
set -euo pipefail
cd "$(dirname "$0")/.."
STEP_NAME=build_wheel
. scripts/steps.sh

OUT=dist
profile_wanted=1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift ;;
    --no-profile) profile_wanted=0 ;;
    *) say "unknown option $1 (--out DIR, --no-profile)"; exit 2 ;;
  esac
  shift
done

CACHE_ROOT=${FAULTGATE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/faultgate-stream}
# maturin as pyproject.toml bounds it; ziglang for --zig (manylinux_2_17 from a newer glibc)
TOOLS_REQUIREMENTS=("maturin>=1.5,<2" "ziglang>=0.13")
PY=${PYTHON:-python3}

if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
command -v cargo >/dev/null 2>&1 || { say "cargo is not installed; building the wheel needs Rust (rustup.rs)"; exit 2; }

# The crate maturin builds, as pyproject.toml names it, and its Cargo workspace (the
# directory of its Cargo.lock): both follow a move of the Rust sources.
manifest=$("$PY" -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["tool"]["maturin"]["manifest-path"])')
crate_root=$(dirname "$manifest")
while [ ! -f "$crate_root/Cargo.lock" ] && [ "$crate_root" != . ] && [ "$crate_root" != / ]; do
  crate_root=$(dirname "$crate_root")
done

# What goes into the wheel, staged in a directory of its own: the package with the examples
# inside it, pyproject.toml, README.md and the crate, without build output. tar keeps the
# files' times, so cargo sees unchanged sources as unchanged.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage="$work/src"
mkdir -p "$stage"
tar -c --exclude=target --exclude=__pycache__ --exclude='*.so' --exclude='*.pyc' \
  pyproject.toml README.md "$crate_root" faultgate_stream | tar -x -C "$stage"
tar -c --exclude=__pycache__ examples | tar -x -C "$stage/faultgate_stream"

# maturin and zig, in an environment of their own, made once per requirement list
tools="$CACHE_ROOT/wheel/tools-$(printf '%s\n' "${TOOLS_REQUIREMENTS[@]}" | sha256sum | cut -c1-8)"
if ! [ -x "$tools/bin/maturin" ] || ! "$tools/bin/python" -c 'import ziglang' 2>/dev/null; then
  mkdir -p "$CACHE_ROOT/wheel"
  exec 8>"$CACHE_ROOT/wheel/.tools.lock"
  flock 8
  if ! [ -x "$tools/bin/maturin" ] || ! "$tools/bin/python" -c 'import ziglang' 2>/dev/null; then
    rm -rf "$tools"
    "$PY" -m venv "$tools"
    run_step "installing the build tools (pip: ${TOOLS_REQUIREMENTS[*]})" "$work/tools.log" \
      "$tools/bin/python" -m pip install --disable-pip-version-check "${TOOLS_REQUIREMENTS[@]}"
  fi
  exec 8>&-
fi

profile=""
if [ "$profile_wanted" = 1 ]; then
  profile_to() { bash scripts/native_profile.sh >"$1"; }
  run_step "the compiled core's profile (scripts/native_profile.sh: cached, else an instrumented build and its \
training, ~2 min)" "$work/profile.log" profile_to "$work/profile"
  profile=$(cat "$work/profile")
  grep 'native_profile:' "$work/profile.log" >&2 || true
fi

key=$({ (cd "$stage" && find . -type f | LC_ALL=C sort | xargs sha256sum); rustc -vV; cat scripts/build_wheel.sh; \
        "$tools/bin/maturin" --version; "$tools/bin/python" -m ziglang version; \
        [ -z "$profile" ] || sha256sum <"$profile"; } | sha256sum | cut -c1-16)
dir="$CACHE_ROOT/wheel/$key"
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9  # two builds of the same sources at once: the second waits and reuses the first's
wheel=$(ls "$dir"/*.whl 2>/dev/null | head -n 1 || true)
if [ -n "$wheel" ]; then
  say "cached: $wheel"
else
  how="plain release build"
  if [ -n "$profile" ]; then
    export RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }-Cprofile-use=$profile"
    how="profile-guided release build"
  fi
  # One build directory and one cargo target directory for every wheel build (one at a
  # time), with the sources' own file times: cargo compiles only what changed since the last.
  exec 7>"$CACHE_ROOT/wheel/.build.lock"
  flock 7
  build_dir="$CACHE_ROOT/wheel/build"
  rm -rf "$build_dir"
  mkdir -p "$build_dir"
  (cd "$stage" && tar -c .) | tar -x -C "$build_dir"
  export CARGO_TARGET_DIR="$CACHE_ROOT/wheel/target"
  mkdir -p "$CARGO_TARGET_DIR"  # a fresh machine's first wheel: .last-sources is written into it below
  # cargo decides what to compile again by comparing the sources' file times with its last
  # build's, and a fresh clone's (CI's) are all new, while another tree's may be older than
  # that build. So every file of the crate that is the same as in the last build here (path
  # and digest, .last-sources) gets a time long past, and every other file the time now:
  # a change to the Python alone compiles no Rust in a fresh clone, and a tree whose Rust
  # differs from the last build's is compiled again even when its files are older (a wheel
  # once shipped another worktree's compiled module).
  (cd "$build_dir" && find "$crate_root" -type f | LC_ALL=C sort | xargs sha256sum) >"$work/sources"
  last="$CARGO_TARGET_DIR/.last-sources"
  [ -f "$last" ] || : >"$last"
  while read -r digest path; do
    if grep -qxF "$digest  $path" "$last"; then
      touch -d @946684800 "$build_dir/$path"
    else
      touch "$build_dir/$path"
    fi
  done <"$work/sources"
  build() {
    (cd "$build_dir" && PATH="$tools/bin:$PATH" maturin build --release --zig --compatibility manylinux_2_17 \
      --interpreter "$tools/bin/python" --out "$work/out")
  }
  run_step "building the wheel (maturin with zig, $how, abi3 manylinux_2_17)" "$work/maturin.log" build
  cp "$work/sources" "$CARGO_TARGET_DIR/.last-sources"
  built=$(ls "$work"/out/*.whl)
  cp "$built" "$dir/.partial"
  mv "$dir/.partial" "$dir/$(basename "$built")"  # in place only once complete
  wheel="$dir/$(basename "$built")"
  say "built $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"
  # bounded: the 20 newest builds are kept (~2 MB each), older ones removed
  ls -dt "$CACHE_ROOT"/wheel/*/ | grep -Ev '/(tools-[^/]*|build|target)/$' | tail -n +21 | xargs -r rm -rf
fi
mkdir -p "$OUT"
cp "$wheel" "$OUT/"
echo "$OUT/$(basename "$wheel")"
