#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages), then configures and builds
# chandy into build/. Sourced by demo.sh and test.sh; safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium and a font: the report test renders a report in a real browser.
packages=(build-essential cmake pkg-config libsimgrid-dev librocksdb-dev libcjson-dev libcmocka-dev libsodium-dev
  chromium fonts-liberation)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCHANDY_WERROR=$werror > /dev/null
cmake --build build -j "$(nproc)"
