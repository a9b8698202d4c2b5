#!/usr/bin/env bash
# Installs the real peers that the end-to-end tests talk to: Debian's Prometheus (apt), an
# OpenTelemetry Collector built with ocb and Go from deploy/collector/builder-config.yaml,
# helm (built with Go; the chart tests render helm/faultgate-stream with it), and, through
# scripts/install_kafka.sh, an Apache Kafka broker's jars (Maven; run on Java 17) and a second
# collector with the Kafka exporter (ocb). The builds do not depend on each other and run
# side by side, each announced, timed and logged under the cache (about 10 minutes on a
# fresh 2-core machine, most of it Go compiling the two collectors).
# Idempotent: on a machine that already has them it only checks them, in seconds.
#
#   bash scripts/install_peers.sh               install/check them all, print the collector's path last
#   bash scripts/install_peers.sh --print-path  print the collector binary's cache path only
#                                               (it may not exist yet); tests/peers.py uses
#                                               this so the hash logic lives here alone
#   bash scripts/install_peers.sh --print-helm  print helm's cache path only (tests/deploy)
set -euo pipefail
cd "$(dirname "$0")/.."
STEP_NAME=install_peers
. scripts/steps.sh

OCB_VERSION=v0.161.0
MANIFEST=deploy/collector/builder-config.yaml
CACHE_ROOT=${FAULTGATE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/faultgate-stream}

collector_dir() {
  if ! command -v go >/dev/null 2>&1; then
    echo "install_peers: go is not on PATH; the collector is built with it" >&2
    exit 1
  fi
  # The Go version is part of the key because a toolchain change can change what builds;
  # the ocb version because it generates the sources.
  local key
  key=$( { cat "$MANIFEST"; go version; echo "ocb $OCB_VERSION"; } | sha256sum | cut -c1-16)
  echo "$CACHE_ROOT/otelcol-$key"
}

if [ "${1:-}" = "--print-path" ]; then
  echo "$(collector_dir)/otelcol-faultgate"
  exit 0
fi

log() { say "$@"; }

# ---------------------------------------------------------------- Prometheus
install_prometheus() {
  if command -v prometheus >/dev/null 2>&1; then
    return
  fi
  log "installing Debian's prometheus"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # Recommends would add node-exporter, another daemon on a fixed port that tests never use.
  apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  # The package's maintainer scripts start a system Prometheus on :9090 where an init
  # system lets them; tests start their own on free ports, so a leftover one only takes
  # memory and a port. Stop it through the same init script that started it.
  if [ -x /etc/init.d/prometheus ]; then
    /etc/init.d/prometheus stop >/dev/null 2>&1 || true
  fi
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    systemctl disable --now prometheus >/dev/null 2>&1 || true
  fi
}

check_prometheus() {
  local version
  version=$(prometheus --version 2>&1)
  version=${version%%$'\n'*}
  log "prometheus: $version"
  # Captured first: grep -q closing the pipe early would make pipefail report a failure.
  local help
  help=$(prometheus --help 2>&1)
  if ! grep -q -- '--enable-feature' <<<"$help"; then
    log "this prometheus has no --enable-feature flag, so no exemplar storage"
    exit 1
  fi
  # Exemplar storage and /api/v1/query_exemplars arrived in Prometheus 2.26.
  local major minor
  read -r major minor < <(echo "$version" | sed -nE 's/.*version ([0-9]+)\.([0-9]+)\..*/\1 \2/p')
  if [ -z "${major:-}" ] || { [ "$major" -eq 2 ] && [ "$minor" -lt 26 ]; } || [ "$major" -lt 2 ]; then
    log "prometheus older than 2.26 cannot store exemplars: $version"
    exit 1
  fi
  # promtool comes in the same package; tests/deploy runs `promtool check/test rules` with it.
  if ! command -v promtool >/dev/null 2>&1; then
    log "promtool is missing (Debian ships it in the prometheus package); reinstall prometheus"
    exit 1
  fi
  log "promtool: $(promtool --version 2>&1 | head -n 1)"
  local listeners
  if listeners=$(ss -ltnH 'sport = :9090' 2>/dev/null) && [ -n "$listeners" ]; then
    log "warning: something still listens on :9090 (tests do not need it)"
  fi
}

# ---------------------------------------------------------------- Collector
build_collector() {
  local dir binary
  dir=$(collector_dir)
  binary="$dir/otelcol-faultgate"
  if [ -x "$binary" ]; then
    log "collector cached: $binary"
    return
  fi
  mkdir -p "$dir"
  # Two runs at once (setup in two shells) would build into the same directory.
  exec 9>"$dir/.lock"
  flock 9
  if [ -x "$binary" ]; then
    log "collector built meanwhile by another run: $binary"
    return
  fi
  # ocb is cached per version beside the collectors, so a fresh machine builds it once.
  local ocb="$CACHE_ROOT/ocb-$OCB_VERSION/builder"
  if [ ! -x "$ocb" ]; then
    log "installing ocb $OCB_VERSION"
    GOBIN="$CACHE_ROOT/ocb-$OCB_VERSION" go install "go.opentelemetry.io/collector/cmd/builder@$OCB_VERSION"
  fi
  # A half-finished earlier build (killed CI run) must not be reused: start it afresh.
  rm -rf "$dir/build"
  cp "$MANIFEST" "$dir/builder-config.yaml"
  log "building the collector (minutes on a fresh machine); log: $dir/build.log"
  local start end
  start=$(date +%s)
  # GOFLAGS=-e reaches ocb's `go mod tidy`: contrib's fileexporter v0.165.1 imports
  # otlpencodingextension in its tests only, the proxy does not serve that module
  # version, and tidy walks the tests of dependencies too. -e lets tidy finish; go build
  # ignores the flag and still fails on any import the binary really needs.
  if ! (cd "$dir" && GOFLAGS="-e ${GOFLAGS:-}" "$ocb" --config builder-config.yaml) >"$dir/build.log" 2>&1; then
    tail -n 40 "$dir/build.log" >&2
    log "collector build failed; full log: $dir/build.log"
    exit 1
  fi
  end=$(date +%s)
  # Moved into place only once complete, so the cache check above never sees a partial file.
  mv "$dir/build/otelcol-faultgate" "$binary"
  # The generated sources are only needed to build; the module and build caches keep
  # what makes a rebuild fast.
  rm -rf "$dir/build"
  log "collector built in $((end - start))s"
}

check_collector() {
  local binary listing
  binary="$(collector_dir)/otelcol-faultgate"
  # this process's own listing, moved into place once read: two setups at once (several
  # worktrees) each truncated the shared file while the other read it, and one saw no component
  listing="$(collector_dir)/components.txt.$$"
  "$binary" components >"$listing" 2>&1 || {
    cat "$listing" >&2
    rm -f "$listing"
    log "the cached collector does not run"
    exit 1
  }
  local name
  for name in otlp batch otlp_grpc otlp_http debug file bearertokenauth load_balancing tail_sampling \
      groupbytrace; do
    if ! grep -qE "^ *(- )?name: $name\$" "$listing"; then
      mv "$listing" "$(collector_dir)/components.txt"
      log "the collector lacks the component '$name'; see $(collector_dir)/components.txt"
      exit 1
    fi
  done
  mv "$listing" "$(collector_dir)/components.txt"
  log "collector: $("$binary" --version)"
}

# ---------------------------------------------------------------- helm
HELM_VERSION=v3.22.0

helm_binary() {
  echo "$CACHE_ROOT/helm-$HELM_VERSION/helm"
}

install_helm() {
  local bin
  bin=$(helm_binary)
  if [ ! -x "$bin" ]; then
    mkdir -p "$(dirname "$bin")"
    exec 8>"$(dirname "$bin")/.lock"
    flock 8
    if [ ! -x "$bin" ]; then
      log "installing helm $HELM_VERSION (go install, a minute or two)"
      # Built into a temporary GOBIN and moved, so a killed build never leaves a partial binary.
      local tmp
      tmp=$(mktemp -d "$(dirname "$bin")/build.XXXXXX")
      (cd "$tmp" && GOBIN="$tmp" go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION")
      mv "$tmp/helm" "$bin"
      rm -rf "$tmp"
    fi
    exec 8>&-
  fi
}

if [ "${1:-}" = "--print-helm" ]; then
  helm_binary
  exit 0
fi

logs="$CACHE_ROOT/logs"
run_step "Prometheus and promtool (Debian's prometheus package, apt)" "$logs/prometheus.log" install_prometheus
check_prometheus
# Independent builds, side by side: Go and Maven spend much of their time fetching modules
# and jars, which overlaps with the others compiling.
start_step "the collector (ocb $OCB_VERSION, Go; cached by its manifest)" "$logs/collector.log" build_collector
start_step "helm $HELM_VERSION (go install)" "$logs/helm.log" install_helm
start_step "Kafka $(bash scripts/install_kafka.sh --version)'s jars (Maven Central)" "$logs/kafka-jars.log" \
  bash scripts/install_kafka.sh --jars-only
start_step "the Kafka-exporter collector (ocb, Go; tests/kafka)" "$logs/kafka-collector.log" \
  bash scripts/install_kafka.sh --collector-only
wait_steps
check_collector
log "helm: $("$(helm_binary)" version --short)"
bash scripts/install_kafka.sh >/dev/null  # checks both, in a second now
collector_dir | sed 's|$|/otelcol-faultgate|'
