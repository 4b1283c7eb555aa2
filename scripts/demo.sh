#!/usr/bin/env bash
# The main job: set up, build, and run the default demo suite
# (suites/demo.json): the comparisons of what chandy measures, their
# report in out/demo-suite/index.html.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec build/chandy suite suites/demo.json --out out/demo-suite "$@"
