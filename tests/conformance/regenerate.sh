#!/usr/bin/env bash
# Regenerates the conformance corpus (corpus/<family>/traces.json, logs.json, expected.json)
# by running each agent framework through its real instrumentation against a scripted model
# on 127.0.0.1. Not a CI step: CI reads the committed files. Needs PyPI (and npm, for the
# JavaScript families: Node 20+) for the first run only.
#   bash tests/conformance/regenerate.sh [FAMILY...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
py="${PYTHON:-python3}"
venv() {  # venv DIR REQUIREMENTS: created once, re-synced when the pins change
  local dir="$1" req="$2"
  if [ ! -x "$dir/bin/python" ]; then "$py" -m venv "$dir"; fi
  if ! cmp -s "$req" "$dir/.pins" 2>/dev/null; then
    "$dir/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
    cp "$req" "$dir/.pins"
  fi
}
main_families=(langgraph-openinference langgraph-openllmetry openai-agents-openinference openai-agents-otel-v2
  openai-v2-span_only openai-v2-event_only openai-v2-span_and_event openai-v2-off
  smolagents-openinference pydantic-ai-genai)
# Each of the others runs in a venv of its own, .venv-<name> from requirements-<name>.txt: their
# pins conflict (CrewAI pins an openai 2.x that openai-agents 0.24 refuses; strands-agents 1.62
# pins opentelemetry-sdk 1.45.1, google-adk 2.13 pins 1.44; several pin litellm).
declare -A venv_of=([crewai-openinference]=crewai
  [strands-native]=strands [strands-native-latest]=strands
  [llamaindex-openinference]=llamaindex [llamaindex-openllmetry]=llamaindex
  [autogen-openinference]=autogen [semantic-kernel-native]=sk [google-adk-native]=adk
  [haystack-openinference]=haystack [dspy-openinference]=dspy [beeai-openinference]=beeai)
# JavaScript families: family -> its folder under generator/js/ (package-lock.json pins it)
declare -A node_families=([vercel-ai-generate]=vercel-ai [vercel-ai-stream]=vercel-ai
  [langgraph-js-openinference]=langgraph-openinference [openai-agents-js-openinference]=openai-agents-openinference
  [mastra-otel-bridge]=mastra)
want=("$@")
[ ${#want[@]} -eq 0 ] && want=("${main_families[@]}" "${!venv_of[@]}" "${!node_families[@]}")
for f in "${want[@]}"; do
  if [ -n "${node_families[$f]:-}" ]; then
    # npm ci: exactly the lock's versions; node.py needs nothing beyond the standard library
    (cd "generator/js/${node_families[$f]}" && { [ -d node_modules ] || npm ci --no-audit --no-fund; })
    rm -rf "corpus/$f"
    "$py" -m generator.run "$f" corpus
    continue
  fi
  name="${venv_of[$f]:-}"
  if [ -n "$name" ]; then
    venv ".venv-$name" "requirements-$name.txt"
    bin=".venv-$name/bin/python"
  else
    venv .venv requirements.txt
    bin=.venv/bin/python
  fi
  rm -rf "corpus/$f"
  "$bin" -m generator.run "$f" corpus 2> >(grep -v "Attributes dict is full\|approximate input token count" >&2)
done
