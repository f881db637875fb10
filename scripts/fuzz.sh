#!/usr/bin/env bash
# Fuzzes the five readers of untrusted input with libFuzzer (Debian's clang-14 and
# libclang-rt-14-dev), under AddressSanitizer and UndefinedBehaviorSanitizer:
#   fuzz_config        the YAML config with --set overrides (tests/fuzz/fuzz_config.cpp)
#   fuzz_safetensors   the safetensors reader and a checkpoint's metadata
#   fuzz_idx           the IDX reader, plain and gzipped
#   fuzz_metrics       a run's metrics.jsonl (and compare's throughput.jsonl), and the
#                      precision report drawn from it
#   fuzz_route_cache   the machine's route cache file, as the route selector reads it
#   scripts/fuzz.sh [CPU_SECONDS [HARNESS...]]   default: 600 CPU-seconds each, all five
#   (HARNESS: config, safetensors, idx, metrics, route_cache)
# Builds into build-fuzz/ and runs the harnesses one after the other, one job each (the
# machine may be shared), in 5-minute runs until each has had CPU_SECONDS of CPU time (on a
# busy machine that takes longer than CPU_SECONDS of wall time), starting from the committed
# corpus tests/fuzz/corpus/<harness> and merging the inputs that add coverage back into it.
# An input that takes over 30 s or 4 GB of memory is a finding, as a crash is.
# Prints each harness's figures (CPU-minutes, executions, corpus size); a finding stops the
# script, leaving the input in build-fuzz/findings-<harness>-*. docs/reliability.md records
# the runs.
set -euo pipefail
cd "$(dirname "$0")/.."
budget=${1:-600}
shift || true
harnesses=("$@")
[[ ${#harnesses[@]} -gt 0 ]] || harnesses=(config safetensors idx metrics route_cache)
command -v clang++-14 >/dev/null || {
  echo "fuzz.sh: clang++-14 missing: apt-get install clang-14 libclang-rt-14-dev" >&2
  exit 1
}
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 \
  -DMANTISSA_FUZZ=ON -DMANTISSA_SANITIZE=address,undefined -DMANTISSA_BUILD_TESTS=OFF \
  -DMANTISSA_BUILD_BENCH=OFF >/dev/null
targets=()
for h in "${harnesses[@]}"; do targets+=("fuzz_$h"); done
cmake --build build-fuzz -j2 --target "${targets[@]}"
TIMEFORMAT="%U %S"
for h in "${harnesses[@]}"; do
  work=build-fuzz/run-$h
  rm -rf "$work" && mkdir -p "$work/new"
  cpu=0 execs=0 start=$(date +%s) chunk=0
  while awk -v c="$cpu" -v b="$budget" 'BEGIN{exit !(c < b)}'; do
    chunk=$((chunk + 1))
    { time (cd "$work" && ../fuzz_"$h" -jobs=1 -workers=1 -max_total_time=300 \
        -rss_limit_mb=4096 -timeout=30 -print_final_stats=1 -artifact_prefix="../findings-$h-" \
        new ../../tests/fuzz/corpus/"$h" >/dev/null 2>&1); } 2>"$work/cpu" || true
    cp "$work/fuzz-0.log" "$work/fuzz-$chunk.log"
    if ls build-fuzz/findings-"$h"-* >/dev/null 2>&1; then
      echo "fuzz_$h: FINDING (see $work/fuzz-$chunk.log and build-fuzz/findings-$h-*)"
      grep -v '^#' "$work/fuzz-$chunk.log" | tail -40
      exit 1
    fi
    read -r user sys <"$work/cpu"
    cpu=$(awk -v c="$cpu" -v u="$user" -v s="$sys" 'BEGIN{print c + u + s}')
    n=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/fuzz-$chunk.log" | grep -o '[0-9]*$')
    execs=$((execs + n))
  done
  # Keep the inputs that add coverage (libFuzzer's merge: never removes a committed input).
  build-fuzz/fuzz_"$h" -merge=1 tests/fuzz/corpus/"$h" "$work/new" >/dev/null 2>&1
  echo "fuzz_$h: $(awk -v c="$cpu" 'BEGIN{printf "%.1f", c / 60}') CPU-minutes" \
    "($(($(date +%s) - start)) s wall, $chunk runs), $execs executions," \
    "corpus $(ls tests/fuzz/corpus/"$h" | wc -l) files, no finding"
done
