#!/usr/bin/env bash
# Fetches Apache Kafka (broker, KRaft mode) as jars from Maven Central for the tests that
# need a real broker (tests/kafka). Idempotent: a complete cache is only checked.
#
#   bash scripts/install_kafka.sh                   install/check, print the jar directory last
#   bash scripts/install_kafka.sh --jars-only       only the broker's jars (install_peers.sh runs
#   bash scripts/install_kafka.sh --collector-only  these two side by side)
#   bash scripts/install_kafka.sh --print-path      print the jar directory only (may not exist yet)
#   bash scripts/install_kafka.sh --collector-path  print the Kafka-exporter collector's path only
#   bash scripts/install_kafka.sh --version         print the Kafka version it fetches
#
# Maven resolves kafka_2.13 and its runtime dependencies into a small pom's
# copy-dependencies target; the tests start kafka.Kafka from that class path. A second,
# small collector (OTLP receiver + the contrib Kafka exporter, v0.150.0) is built with ocb
# from deploy/collector/builder-config-kafka.yaml and cached under a hash of it.
set -euo pipefail
cd "$(dirname "$0")/.."

KAFKA_VERSION=${FAULTGATE_KAFKA_VERSION:-4.1.1}
CACHE_ROOT=${FAULTGATE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/faultgate-stream}
DIR="$CACHE_ROOT/kafka-$KAFKA_VERSION"

OCB_VERSION=v0.150.0
MANIFEST=deploy/collector/builder-config-kafka.yaml

collector_dir() {
  local key
  key=$( { cat "$MANIFEST"; go version; echo "ocb $OCB_VERSION"; } | sha256sum | cut -c1-16)
  echo "$CACHE_ROOT/otelcol-kafka-$key"
}

if [ "${1:-}" = "--print-path" ]; then
  echo "$DIR/libs"
  exit 0
fi
if [ "${1:-}" = "--collector-path" ]; then
  echo "$(collector_dir)/otelcol-faultgate-kafka"
  exit 0
fi
if [ "${1:-}" = "--version" ]; then
  echo "$KAFKA_VERSION"
  exit 0
fi

log() { echo "install_kafka: $*" >&2; }

fetch_jars() {
  for tool in java mvn; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      log "$tool is not on PATH (Java 17 and Maven are needed to fetch and run the broker)"
      exit 1
    fi
  done

  # Bump when the pom below changes, so a cache fetched from an older pom is fetched again.
  POM_REVISION=2
  if [ "$(cat "$DIR/libs/.complete" 2>/dev/null)" != "$POM_REVISION" ]; then
    mkdir -p "$DIR"
    exec 9>"$DIR/.lock"
    flock 9
    if [ "$(cat "$DIR/libs/.complete" 2>/dev/null)" != "$POM_REVISION" ]; then
      rm -rf "$DIR/libs"
      cat >"$DIR/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>faultgate-stream</groupId>
  <artifactId>kafka-broker-for-tests</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>$KAFKA_VERSION</version>
    </dependency>
    <!-- the broker logs through slf4j 1.7 (kafka's own dependency); a binding of the same
         line makes its log readable in a failing test's output -->
    <dependency>
      <groupId>org.slf4j</groupId>
      <artifactId>slf4j-simple</artifactId>
      <version>1.7.36</version>
    </dependency>
  </dependencies>
</project>
POM
      log "fetching kafka_2.13 $KAFKA_VERSION and its runtime dependencies; log: $DIR/mvn.log"
      if ! (cd "$DIR" && mvn -B -q dependency:copy-dependencies -DincludeScope=runtime \
              -DoutputDirectory=libs) >"$DIR/mvn.log" 2>&1; then
        tail -n 30 "$DIR/mvn.log" >&2
        log "fetching Kafka failed; full log: $DIR/mvn.log"
        exit 1
      fi
      echo "$POM_REVISION" >"$DIR/libs/.complete"
    fi
  fi

  if ! ls "$DIR"/libs/kafka_2.13-"$KAFKA_VERSION".jar >/dev/null 2>&1; then
    log "the cache $DIR/libs lacks kafka_2.13-$KAFKA_VERSION.jar"
    exit 1
  fi
  log "kafka $KAFKA_VERSION: $(ls "$DIR"/libs/*.jar | wc -l) jars in $DIR/libs"
}

# ---------------------------------------------------------------- the Kafka-exporter collector
build_collector() {
  local dir binary ocb
  dir=$(collector_dir)
  binary="$dir/otelcol-faultgate-kafka"
  if [ -x "$binary" ]; then
    log "kafka collector cached: $binary"
    return
  fi
  mkdir -p "$dir"
  exec 8>"$dir/.lock"
  flock 8
  if [ -x "$binary" ]; then
    return
  fi
  ocb="$CACHE_ROOT/ocb-$OCB_VERSION/builder"
  if [ ! -x "$ocb" ]; then
    log "installing ocb $OCB_VERSION"
    GOBIN="$CACHE_ROOT/ocb-$OCB_VERSION" go install "go.opentelemetry.io/collector/cmd/builder@$OCB_VERSION"
  fi
  rm -rf "$dir/build"
  cp "$MANIFEST" "$dir/builder-config.yaml"
  log "building the Kafka-exporter collector (minutes on a fresh machine); log: $dir/build.log"
  # -e for the same reason as in install_peers.sh: tidy walks dependencies' tests
  if ! (cd "$dir" && GOFLAGS="-e ${GOFLAGS:-}" "$ocb" --config builder-config.yaml) >"$dir/build.log" 2>&1; then
    tail -n 40 "$dir/build.log" >&2
    log "kafka collector build failed; full log: $dir/build.log"
    exit 1
  fi
  mv "$dir/build/otelcol-faultgate-kafka" "$binary"
  rm -rf "$dir/build"
}

collector() {
  if ! command -v go >/dev/null 2>&1; then
    log "go is not on PATH; the Kafka-exporter collector is built with it"
    exit 1
  fi
  build_collector
  # captured first: grep -q closing the pipe early would make pipefail report a failure
  local components
  components=$("$(collector_dir)/otelcol-faultgate-kafka" components 2>&1)
  grep -qE "^ *(- )?name: kafka$" <<<"$components" || {
    log "the cached kafka collector lacks the kafka exporter"
    exit 1
  }
  log "kafka collector: $("$(collector_dir)/otelcol-faultgate-kafka" --version)"
}

case "${1:-}" in
  --jars-only) fetch_jars ;;
  --collector-only) collector ;;
  *) fetch_jars; collector; echo "$DIR/libs" ;;
esac
