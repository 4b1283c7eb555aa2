#!/usr/bin/env bash
# The whole test suite: set up, build, and run every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cd build
exec ctest --output-on-failure -j "$(nproc)" "$@"
