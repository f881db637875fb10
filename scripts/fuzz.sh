#!/usr/bin/env bash
# Fuzzes the three readers of untrusted input with libFuzzer (Debian's clang-14 and
# libclang-rt-14-dev), under AddressSanitizer and UndefinedBehaviorSanitizer:
#   fuzz_config        the YAML config with --set overrides (tests/fuzz/fuzz_config.cpp)
#   fuzz_safetensors   the safetensors reader and a checkpoint's metadata
#   fuzz_idx           the IDX reader, plain and gzipped
#   scripts/fuzz.sh [SECONDS [HARNESS...]]   default: 600 seconds each, all three
# Builds into build-fuzz/, runs the harnesses one after the other (one job each: the machine
# may be shared), starting from the committed corpus tests/fuzz/corpus/<harness>, and merges
# the inputs that add coverage back into it. Prints each run's figures (CPU seconds,
# executions, corpus size); a finding stops the script, leaving the input in
# build-fuzz/findings-<harness>-*. docs/reliability.md records the runs.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
harnesses=("$@")
[[ ${#harnesses[@]} -gt 0 ]] || harnesses=(config safetensors idx)
for tool in clang++-14; do
  command -v "$tool" >/dev/null || { echo "fuzz.sh: $tool missing: apt-get install clang-14 libclang-rt-14-dev" >&2; exit 1; }
done
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 \
  -DMANTISSA_FUZZ=ON -DMANTISSA_SANITIZE=address,undefined -DMANTISSA_BUILD_TESTS=OFF \
  -DMANTISSA_BUILD_BENCH=OFF >/dev/null
targets=()
for h in "${harnesses[@]}"; do targets+=("fuzz_$h"); done
cmake --build build-fuzz -j2 --target "${targets[@]}"
for h in "${harnesses[@]}"; do
  work=build-fuzz/run-$h
  rm -rf "$work" && mkdir -p "$work/new"
  start=$(date +%s)
  TIMEFORMAT="%U %S"
  { time (cd "$work" && ../fuzz_"$h" -jobs=1 -workers=1 -max_total_time="$seconds" \
      -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="../findings-$h-" \
      new ../../tests/fuzz/corpus/"$h" >/dev/null 2>&1) ; } 2> "$work/cpu" || true
  log=$work/fuzz-0.log
  if ls build-fuzz/findings-"$h"-* >/dev/null 2>&1; then
    echo "fuzz_$h: FINDING (see $log and build-fuzz/findings-$h-*)"
    tail -40 "$log"
    exit 1
  fi
  read -r user sys < "$work/cpu"
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  # Keep the inputs that add coverage (libFuzzer's merge: minimal, never removes a seed).
  build-fuzz/fuzz_"$h" -merge=1 tests/fuzz/corpus/"$h" "$work/new" >/dev/null 2>&1
  echo "fuzz_$h: $(awk -v u="$user" -v s="$sys" 'BEGIN{printf "%.1f", (u+s)/60}') CPU-minutes" \
       "($(( $(date +%s) - start )) s wall), $execs executions," \
       "$(ls "$work/new" | wc -l) new inputs this run, corpus $(ls tests/fuzz/corpus/"$h" | wc -l) files, no finding"
done
