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
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=0:${ASAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
cd build-asan
status=0
ctest --output-on-failure -j "$(nproc)" "$@" || status=$?
end=$(date +%s)
echo "sanitize: build $((built - start)) s, tests $((end - built)) s"
exit $status
