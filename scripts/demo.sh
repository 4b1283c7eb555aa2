#!/usr/bin/env bash
# The main job: set up, build, and run the default demo scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec build/chandy run scenarios/demo.json "$@"
