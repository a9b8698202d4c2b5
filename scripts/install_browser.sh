#!/usr/bin/env bash
# Installs the browser the HTML report's test renders the page in: Debian's chromium,
# driven by PyPI's playwright through its executable (playwright's own browser download
# is not reachable from these machines, and would be a second browser to keep current).
# Idempotent: where chromium is already installed it only prints its path.
#
#   bash scripts/install_browser.sh     install/check chromium, print its path last
set -euo pipefail

log() { echo "install_browser: $*" >&2; }

if ! command -v chromium >/dev/null 2>&1; then
  log "installing Debian's chromium"
  export DEBIAN_FRONTEND=noninteractive
  # other setups on a shared machine may hold apt's lock a while: wait for it, not fail
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  # recommends would add fonts and desktop integration a headless render does not need
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi
version=$(chromium --version 2>/dev/null || true)
if [ -z "$version" ]; then
  log "chromium is installed but does not start (chromium --version printed nothing)"
  exit 1
fi
log "$version"
command -v chromium
