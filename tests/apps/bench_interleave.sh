#!/usr/bin/env bash
# bench_interleave.sh MANTISSA CONFIG WORKDIR
# `bench train --interleave` runs independent trainings: each run's losses, step by step, are
# those of the same precision benchmarked alone (the same bits, as JSON prints them), and it
# prints one ratio line per run.
set -euo pipefail
bin=$1 config=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
losses() { grep -o '"losses":\[[^]]*\]' "$1"; }
out=$("$bin" bench train --config "$config" --precision float32,bfloat16 --interleave --steps 2 \
  --warmup 1 --json "$dir/both.jsonl" 2>/dev/null)
for p in float32 bfloat16; do
  "$bin" bench train --config "$config" --precision $p --steps 2 --warmup 1 \
    --json "$dir/$p.jsonl" >/dev/null 2>&1
done
[[ $(wc -l < "$dir/both.jsonl") -eq 2 ]] || { echo "expected 2 JSON lines"; exit 1; }
alone=$(cat "$dir/float32.jsonl" "$dir/bfloat16.jsonl" | grep -o '"losses":\[[^]]*\]')
together=$(losses "$dir/both.jsonl")
if [[ "$alone" != "$together" ]]; then
  echo "interleaved losses differ from the runs alone:"; echo "$together"; echo "$alone"; exit 1
fi
grep -q '"interleaved":true' "$dir/both.jsonl" || { echo "JSON does not say interleaved"; exit 1; }
# Here-strings, not `echo | grep -q`: grep -q leaves at its first match, and under pipefail a
# longer output's echo then dies of SIGPIPE, failing a check that matched.
grep -Eq '^  bfloat16, POL 1 +[0-9]+  [0-9]+\.[0-9]{3}x$' <<<"$out" || {
  echo "no ratio line in:"; echo "$out"; exit 1; }
grep -q 'peak RSS         not measured' <<<"$out" || { echo "peak RSS claimed"; exit 1; }
echo "interleaved runs train as they do alone"
