#!/usr/bin/env bash
# Fuzzing: builds the libFuzzer targets of tests/fuzz/ into build-fuzz/ with
# clang (-DCHANDY_FUZZ=ON), replays every committed corpus once (ctest), then
# runs each target for N seconds on its corpus. New inputs go to a scratch
# corpus (build-fuzz/fuzz-out/TARGET/corpus), never to the committed one.
# Prints executions and findings per target; exits 1 on a finding, naming the
# file that reproduces it (replay: build-fuzz/tests/fuzz/fuzz_TARGET FILE).
#
# Usage: scripts/fuzz.sh [TARGET...] [--seconds N]   (default: all, 60 s each)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=${2:?--seconds needs a number}; shift 2 ;;
    --seconds=*) seconds=${1#--seconds=}; shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    -*) echo "fuzz: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
case "$seconds" in ''|*[!0-9]*) echo "fuzz: --seconds wants a whole number, not '$seconds'" >&2; exit 2 ;; esac

if ! command -v clang > /dev/null || ! command -v clang++ > /dev/null; then
  echo "fuzz: needs clang and libFuzzer: apt-get install clang libclang-rt-14-dev" >&2
  exit 2
fi
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCHANDY_FUZZ=ON \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ > /dev/null
cmake --build build-fuzz --target fuzz -j "$(nproc)"
bin=build-fuzz/tests/fuzz
if [ ${#targets[@]} -eq 0 ]; then
  for exe in "$bin"/fuzz_*; do
    [ -x "$exe" ] && targets+=("${exe##*/fuzz_}")
  done
fi
for t in "${targets[@]}"; do
  [ -x "$bin/fuzz_$t" ] || { echo "fuzz: no target '$t' (see tests/fuzz/)" >&2; exit 2; }
done

# The committed corpora first: a regression shows at once.
(cd build-fuzz && ctest --output-on-failure -R '^fuzz_')

status=0
for t in "${targets[@]}"; do
  out=build-fuzz/fuzz-out/$t
  mkdir -p "$out/corpus"
  rm -f "$out"/crash-* "$out"/leak-* "$out"/timeout-* "$out"/oom-*
  dict=()
  [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
  rc=0
  start=$(date +%s)
  "$bin/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$out/" "${dict[@]}" \
    "$out/corpus" "tests/fuzz/corpus/$t" > "$out/log" 2>&1 || rc=$?
  took=$(( $(date +%s) - start ))
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$out/log" | tail -1)
  found=$(ls "$out"/crash-* "$out"/leak-* "$out"/timeout-* "$out"/oom-* 2>/dev/null || true)
  n=0
  [ -n "$found" ] && n=$(echo "$found" | wc -l)
  if [ "$rc" -ne 0 ] && [ "$n" -eq 0 ]; then
    echo "fuzz: $t exited with $rc and left no input: see $out/log" >&2
    status=1
  fi
  echo "fuzz: $t: ${execs:-?} executions in ${took} s, $n finding(s) (log: $out/log)"
  if [ "$n" -gt 0 ]; then
    status=1
    echo "$found" | sed 's/^/  reproduce: build-fuzz\/tests\/fuzz\/fuzz_'"$t"' /'
  fi
done
exit $status
