#!/usr/bin/env bash
# The profile the compiled module (native/, faultgate_stream._native) is built with: prints
# the path of an LLVM profile for rustc's -Cprofile-use, or nothing when none can be made
# (the module is then built without one, and works the same, only slower). Everything
# else it says goes to stderr. Used by `scripts/setup.sh --profile-guided` (the benches'
# build) and scripts/build_wheel.sh (the wheel's).
#
# Why: laid out for the branches and calls it really takes, the module runs 14% fewer
# instructions checking faultgate's gate files and 13% fewer per live span (callgrind,
# bench/README.md), on input it was not trained on: scripts/pgo_train.py runs the
# repository's own examples, never the files the benches time.
#
# How: an instrumented build (-Cprofile-generate) runs scripts/pgo_train.py from a copy of
# the package, and rustup's llvm-profdata merges what it counted. The profile is cached
# under ~/.cache/faultgate-stream/pgo, keyed by the module's sources, Cargo.lock, the
# training script and rustc's version; a change to any of them makes a new one (about two
# minutes: one instrumented build and a few seconds of training). Python changes do not:
# the profile describes the Rust code.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "native_profile: $*" >&2; }
none() { say "$* - building the compiled module without a profile"; exit 0; }

command -v cargo >/dev/null 2>&1 && command -v rustc >/dev/null 2>&1 || none "cargo or rustc not found"
[ -x .venv/bin/python ] || none "no .venv"

host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ] && command -v rustup >/dev/null 2>&1; then
  # llvm-profdata must be the LLVM rustc was built with: rustup's llvm-tools is that one
  rustup component add llvm-tools >&2 || true
fi
[ -x "$profdata" ] || none "rustup's llvm-tools (llvm-profdata) is not installed"

# The crate maturin builds, as pyproject.toml names it (so a move of the Rust sources is
# followed), and the Cargo workspace around it: the directory of its Cargo.lock.
read -r manifest module < <(.venv/bin/python -c 'import tomllib
m = tomllib.load(open("pyproject.toml", "rb"))["tool"]["maturin"]
print(m["manifest-path"], m["module-name"])') || none "pyproject.toml names no [tool.maturin] manifest-path"
root=$(dirname "$manifest")
while [ ! -f "$root/Cargo.lock" ] && [ "$root" != . ] && [ "$root" != / ]; do root=$(dirname "$root"); done

cache="${XDG_CACHE_HOME:-$HOME/.cache}/faultgate-stream/pgo"
mkdir -p "$cache"
# (the Rust sources, then the manifests, then the lock file: for one crate in native/, the
# same bytes as the key before the manifest was read from pyproject.toml, so profiles made
# then are still found)
rust_files() { find "$root" -path "$root/target" -prune -o -type f -name "$1" -print | LC_ALL=C sort; }
key=$({ rustc -vV; rust_files '*.rs' | xargs cat; rust_files Cargo.toml | xargs cat; cat "$root/Cargo.lock" \
        scripts/pgo_train.py; } | sha256sum | cut -c1-16)
profile="$cache/$key.profdata"
if [ -s "$profile" ]; then
  echo "$profile"
  exit 0
fi
# Two trainings of the same sources at once (two worktrees' wheel tests): the second waits
# for the first's profile instead of writing the same file beside it.
exec 9>"$cache/$key.lock"
flock 9
if [ -s "$profile" ]; then
  echo "$profile"
  exit 0
fi

# The training imports the package's dependencies: they are installed first, as the
# package's own install would (pyproject.toml's list, its lower bounds).
.venv/bin/python - <<'EOF' | xargs -d '\n' .venv/bin/python -m pip install --quiet --disable-pip-version-check >&2 \
  || none "the package's dependencies did not install"
import tomllib
print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))
EOF

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say "training the compiled module's build (an instrumented build, then scripts/pgo_train.py)"
# its own target directory, kept: a later training rebuilds only what changed
lib=${module##*.}  # faultgate_stream._native -> lib_native.so
RUSTFLAGS="-Cprofile-generate=$work/raw" PYO3_PYTHON="$PWD/.venv/bin/python" CARGO_TARGET_DIR="$cache/target" \
  cargo build --release --manifest-path "$manifest" >&2 || none "the instrumented build failed"
rm -rf "$work/raw"  # what build scripts counted while building is not the module's
cp -r faultgate_stream "$work/"
rm -f "$work/faultgate_stream/$lib"*.so
cp "$cache/target/release/lib$lib.so" "$work/faultgate_stream/$lib.abi3.so"
repo=$PWD
(cd "$work" && PYTHONPATH="$work" "$repo/.venv/bin/python" "$repo/scripts/pgo_train.py" >&2) \
  || none "scripts/pgo_train.py failed"
ls "$work"/raw/*.profraw >/dev/null 2>&1 || none "the training wrote no profile (was the instrumented module imported?)"
"$profdata" merge -o "$profile.tmp" "$work"/raw/*.profraw >&2 || none "llvm-profdata could not merge the profile"
mv "$profile.tmp" "$profile"
say "profile $profile"
echo "$profile"
