#!/usr/bin/env bash
# Runs mantissa's GPT-ref benchmark in every precision and the PyTorch peer
# (../shared/bench/peer_torch_gpt.py, Debian's python3-torch) back to back on this machine,
# then prints the ratios issue 8 asks for. Nothing runs concurrently: the machine has 2 cores.
#
#   bench/compare_with_peer.sh [--steps N] [--half-steps N] [--peer-steps N] [--out DIR]
#
#   --steps N       timed steps for our float32 and bfloat16 runs (default 200: their losses
#                   after 200 steps are compared too)
#   --half-steps N  timed steps for float16 + DLS and cbfloat16 + DLS (default 20)
#   --peer-steps N  the peer's timed steps per precision, after its 2 warm-up steps
#                   (default 3; one peer step takes about a minute here)
#   --out DIR       where the JSON lines and logs go (default bench-results/<UTC time>)
#
# Needs: build/mantissa (scripts/build.sh) and python3-torch (scripts/install-deps.sh --peer).
set -euo pipefail
cd "$(dirname "$0")/.."

steps=200
half_steps=20
peer_steps=3
out="bench-results/$(date -u +%Y%m%dT%H%M%SZ)"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --half-steps) half_steps=$2; shift 2 ;;
    --peer-steps) peer_steps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "compare_with_peer.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done

peer=../shared/bench/peer_torch_gpt.py
[[ -x build/mantissa ]] || { echo "compare_with_peer.sh: build/mantissa is missing: run scripts/build.sh" >&2; exit 2; }
[[ -f $peer ]] || { echo "compare_with_peer.sh: the peer script $peer is missing" >&2; exit 2; }
/usr/bin/python3 -c 'import torch' 2>/dev/null ||
  { echo "compare_with_peer.sh: PyTorch is missing: run scripts/install-deps.sh --peer" >&2; exit 2; }

mkdir -p "$out"
json="$out/mantissa.jsonl"
: >"$json"
config=configs/bench/gpt-ref.yaml

ours() {  # precision, timed steps
  echo "== mantissa $1 ($2 timed steps)" >&2
  build/mantissa bench train --config "$config" --precision "$1" --steps "$2" --warmup 2 \
    --json "$json" 2>"$out/mantissa-$1.log" | tee -a "$out/report.txt"
}
ours float32 "$steps"
ours bfloat16 "$steps"
ours float16 "$half_steps"
ours cbfloat16 "$half_steps"
# Where the time goes, once (bfloat16, 5 steps).
echo "== mantissa bfloat16 --profile" >&2
build/mantissa bench train --config "$config" --precision bfloat16 --steps 5 --warmup 2 --profile \
  2>/dev/null | tee -a "$out/report.txt"

echo "== peer: PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)') ($peer_steps timed steps each)" >&2
/usr/bin/time -v /usr/bin/python3 "$peer" --steps "$peer_steps" >"$out/peer.txt" 2>"$out/peer-time.txt"
cat "$out/peer.txt"

/usr/bin/python3 - "$json" "$out/peer.txt" "$out/peer-time.txt" <<'EOF' | tee "$out/ratios.txt"
import json, re, sys
ours = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    ours[r["precision"].split(",")[0].split(" ")[0]] = r
peer = {}
for line in open(sys.argv[2]):
    m = re.search(r"(fp32|bf16-autocast): .*tokens/s=(\d+)", line)
    if m: peer[m.group(1)] = float(m.group(2))
rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(sys.argv[3]).read())
peer_rss = int(rss.group(1)) / 1024 if rss else float("nan")
f32, bf16, f16, cbf16 = (ours[k] for k in ("float32", "bfloat16", "float16", "cbfloat16"))
def row(name, value, target, ok):
    print(f"{name:<52} {value:>10}   target {target:<10} {'met' if ok else 'NOT met'}")
print("\nmantissa tokens/s (median): " + ", ".join(f"{k} {v['items_per_s']:.0f}" for k, v in ours.items()))
print(f"peer tokens/s (median): fp32 {peer['fp32']:.0f}, bf16-autocast {peer['bf16-autocast']:.0f}\n")
r = bf16["items_per_s"] / peer["bf16-autocast"]; row("bfloat16 POL 1 / peer bf16-autocast", f"{r:.1f}x", ">= 2.0x", r >= 2.0)
r = f32["items_per_s"] / peer["fp32"]; row("float32 / peer fp32", f"{r:.1f}x", ">= 1.2x", r >= 1.2)
r = f16["items_per_s"] / f32["items_per_s"]; row("float16 + DLS / our float32", f"{r:.2f}x", ">= 2.0x", r >= 2.0)
r = cbf16["items_per_s"] / f32["items_per_s"]; row("cbfloat16 + DLS / our float32", f"{r:.2f}x", ">= 2.0x", r >= 2.0)
worst = max(v["peak_rss_mib"] for v in ours.values())
row("peak RSS: our largest / peer process", f"{worst:.0f}/{peer_rss:.0f} MiB", "<= 1.0x", worst <= peer_rss)
for k, v in ours.items():
    print(f"MFU {k:<10} {100 * v['mfu']:5.1f} %  ({v['gflops']:.1f} GFLOP/s of a {v['gemm_peak_gflops']:.1f} GFLOP/s GEMM peak measured in the same process)")
n = min(200, len(f32["losses"]), len(bf16["losses"]))  # steps 1..n, warm-up included
if n >= 10:
    a = sum(f32["losses"][n - 10:n]) / 10
    b = sum(bf16["losses"][n - 10:n]) / 10
    row(f"loss, mean of steps {n - 9}-{n}: float32 {a:.4f} vs bfloat16 {b:.4f}", f"{abs(a - b):.4f}", "<= 0.05", abs(a - b) <= 0.05)
EOF
echo "results in $out" >&2
