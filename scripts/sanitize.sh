#!/usr/bin/env bash
# The whole test suite under AddressSanitizer and UndefinedBehaviorSanitizer:
# configures build-asan/ with -DCHANDY_SANITIZE=ON (no LTO), builds, and runs
# every test with ctest. Any sanitizer report fails the test it came from.
# Usage: scripts/sanitize.sh [ctest arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
start=$(date +%s)
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCHANDY_SANITIZE=ON \
  -DCHANDY_WERROR=$werror > /dev/null
cmake --build build-asan -j "$(nproc)"
built=$(date +%s)

# Leaks are errors, except those listed (with the reason) in tests/lsan.supp.
# Every report is also written under build-asan/sanitizer-reports/: a test
# that expects a child process to fail (exit 1 or 2) would not notice that
# it failed for a sanitizer instead, so any report there fails the run.
reports=$root/build-asan/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:exitcode=86:log_path=$reports/asan:${ASAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=86:log_path=$reports/ubsan:${UBSAN_OPTIONS:-}"
cd build-asan
status=0
ctest --output-on-failure -j "$(nproc)" "$@" || status=$?
end=$(date +%s)
found=$(grep -l -E "ERROR: |runtime error" "$reports"/* 2> /dev/null || true)
if [ -n "$found" ]; then
  echo "sanitize: sanitizer reports (a test may have passed regardless):"
  for f in $found; do echo "== $f"; head -40 "$f"; done
  status=1
fi
echo "sanitize: build $((built - start)) s, tests $((end - built)) s"
exit $status
