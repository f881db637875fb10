#!/usr/bin/env bash
# The Fashion-MNIST models (the two CNNs and the MLP) beside the PyTorch peer (issue 24): for
# each config, mantissa's float32 and bfloat16 interleaved in one process (`bench train
# --interleave`), then bench/peer_torch_cnn.py (the same model in PyTorch) eager and compiled,
# fp32 and bf16 autocast, right after; prints one table: our samples/s, the peer's best of
# eager and compiled, ratios.
#
#   bench/compare_cnn_with_peer.sh [--threads N] [--steps N] [--out DIR]
#
#   --threads N  OpenMP threads for ours, torch threads for the peer (default 2)
#   --steps N    timed steps of each run, after 5 warm-up steps (default 40)
#   --out DIR    where the logs and JSON lines go (default bench-results/cnn-<UTC time>)
#
# Configs: configs/fashion_mnist/cnn-float32.yaml (16 / 32 channels),
# configs/bench/cnn-wide.yaml (64 / 128) and configs/fashion_mnist/mlp-float32.yaml. Needs build/mantissa and the peer venv
# ($MANTISSA_PEER_DIR/venv, default /opt/mantissa-peer; bench/install-peer.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

threads=2 steps=40
out="bench-results/cnn-$(date -u +%Y%m%dT%H%M%SZ)"
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --threads) threads=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "compare_cnn_with_peer.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
[[ $threads =~ ^[1-9][0-9]*$ && $steps =~ ^[1-9][0-9]*$ ]] ||
  { echo "compare_cnn_with_peer.sh: --threads and --steps take positive integers" >&2; exit 2; }
py=${MANTISSA_PEER_DIR:-/opt/mantissa-peer}/venv/bin/python
[[ -x build/mantissa ]] || { echo "compare_cnn_with_peer.sh: build/mantissa is missing" >&2; exit 2; }
[[ -x $py ]] || { echo "compare_cnn_with_peer.sh: no peer at $py (bench/install-peer.sh)" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)  # absolute: the peer runs from another directory
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $threads threads, load $(cut -d' ' -f1-3 /proc/loadavg)"

# samples/s of one precision in an interleaved bench log
ours() { awk -v p="$2" '$0 ~ "^  " p { print $(NF-1); exit }' "$1"; }
# the best samples/s of the peer's runs of one precision
peer_best() { "$py" -c 'import json,sys
rows=[json.loads(l) for l in open(sys.argv[1])]
print(round(max(r["samples_per_s"] for r in rows if r["precision"]==sys.argv[2])))' "$1" "$2"; }

printf '%-28s %10s %10s %10s %10s %8s %8s\n' config "ours fp32" "ours bf16" "peer fp32" "peer bf16" fp32 bf16
for spec in "configs/fashion_mnist/cnn-float32.yaml cnn 16 32" "configs/bench/cnn-wide.yaml cnn 64 128" \
  "configs/fashion_mnist/mlp-float32.yaml mlp 0 0"; do
  read -r config model c1 c2 <<<"$spec"
  name=$(basename "$config" .yaml)
  OMP_NUM_THREADS=$threads build/mantissa bench train --config "$config" --interleave \
    --precision float32,bfloat16 --steps "$steps" --warmup 5 > "$out/$name-ours.txt" 2>&1
  for prec in float32 bfloat16; do
    for compile in "" --compile; do
      (cd /tmp && "$py" "$OLDPWD/bench/peer_torch_cnn.py" --model "$model" --threads "$threads" \
        --conv1 "$c1" --conv2 "$c2" --precision "$prec" $compile --steps "$steps" --warmup 5 \
        --json "$out/$name-peer.jsonl") >> "$out/$name-peer.txt" 2>&1
    done
  done
  of=$(ours "$out/$name-ours.txt" float32) ob=$(ours "$out/$name-ours.txt" bfloat16)
  pf=$(peer_best "$out/$name-peer.jsonl" float32) pb=$(peer_best "$out/$name-peer.jsonl" bfloat16)
  printf '%-28s %10s %10s %10s %10s %7.2fx %7.2fx\n' "$name" "$of" "$ob" "$pf" "$pb" \
    "$(echo "$of / $pf" | bc -l)" "$(echo "$ob / $pb" | bc -l)"
done
echo "logs: $out"
