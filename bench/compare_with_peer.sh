#!/usr/bin/env bash
# Runs mantissa's GPT-ref benchmark in every precision and the project's PyTorch peer
# (bench/peer_torch_gpt.py, the same GPT from the same config) back to back on this machine,
# then prints our throughput against the peer's best (issue 12). Nothing runs concurrently: the
# machine has 2 cores.
#
# On GPT-ref our four precisions run interleaved in one process (`bench train --interleave`:
# step s of every run, in turn), so their ratios are taken under the same machine conditions.
# The memory-bound config runs each precision alone, one after the other: peak RSS needs a
# process per run, and interleaved there, each run's gigabytes sit idle for tens of seconds
# between its steps (on these VMs, touching them again cost float32 up to 10 s a step).
#
#   bench/compare_with_peer.sh [--steps N] [--mem-steps N] [--peer-steps N] [--out DIR]
#
#   --steps N       timed steps of each of our four precisions on GPT-ref, after 2 warm-up steps
#                   (default 200: float32's and bfloat16's losses after 200 steps are compared)
#   --mem-steps N   timed steps per precision on the memory-bound configs/bench/gpt-mem.yaml,
#                   after 1 warm-up step, each precision alone (default 3; 0 skips it)
#   --peer-steps N  the peer's timed steps in each of its runs, after its 2 warm-up steps
#                   (default 10)
#   --out DIR       where the JSON lines and logs go (default bench-results/<UTC time>)
#
# The peer is the strongest one installed (bench/install-peer.sh installs it), picked in this order:
#   1. a PyTorch 2.x from the package index in $MANTISSA_PEER_DIR/venv (default /opt/mantissa-peer);
#   2. Debian's python3-torch with an optimized BLAS (libopenblas0-pthread);
#   3. none: Debian's python3-torch on the reference BLAS is ~20x slower and no peer, so the script
#      refuses rather than print meaningless ratios.
# For each precision, float32 and bfloat16 (torch.autocast on the CPU, float32 master weights),
# the peer runs on configs/bench/gpt-ref.yaml in up to four variants, one process each:
# eager and compiled (torch.compile; only where bench/install-peer.sh's check found that it works
# here) times fused attention (F.scaled_dot_product_attention; PyTorch 2.x only) and explicit
# attention (masked softmax, as minGPT). The report prints a table of every variant and takes the
# BEST tokens/s of a precision as the peer's figure: our float32 / the peer's best float32 and
# our bfloat16 / the peer's best bfloat16. A compiled variant that fails is reported as failed
# and left out of the best; an eager one that fails stops the script.
# Each peer run uses 2 threads. The report names the peer (version, where from) and prints its
# BLAS/oneDNN configuration, its thread count and the CPU ISA oneDNN dispatches to.
#
# Needs: build/mantissa (scripts/build.sh) and a peer (bench/install-peer.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

steps=200
mem_steps=3
peer_steps=10
out="bench-results/$(date -u +%Y%m%dT%H%M%SZ)"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --mem-steps) mem_steps=$2; shift 2 ;;
    --peer-steps) peer_steps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare_with_peer.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done

peer=bench/peer_torch_gpt.py
peer_dir=${MANTISSA_PEER_DIR:-/opt/mantissa-peer}
peer_threads=2
[[ -x build/mantissa ]] || { echo "compare_with_peer.sh: build/mantissa is missing: run scripts/build.sh" >&2; exit 2; }
[[ -f $peer ]] || { echo "compare_with_peer.sh: the peer script $peer is missing" >&2; exit 2; }

# --- Pick the strongest peer before spending any time on our runs.
torch_version() { (cd /tmp && "$1" -c 'import torch; print(torch.__version__)' 2>/dev/null) || true; }
peer_py= peer_version= peer_from=
v=$( [[ -x $peer_dir/venv/bin/python ]] && torch_version "$peer_dir/venv/bin/python" || true)
if [[ -n $v && ${v%%.*} -ge 2 ]]; then
  peer_py=$peer_dir/venv/bin/python peer_version=$v
  peer_from="PyTorch $v, wheel from the package index (PyPI), venv $peer_dir/venv"
else
  v=$(torch_version /usr/bin/python3)
  [[ -n $v ]] || { echo "compare_with_peer.sh: no PyTorch peer: run bench/install-peer.sh" >&2; exit 2; }
  # Which BLAS Debian's PyTorch really loads (through the libblas.so.3 alternative).
  blas=$(cd /tmp && /usr/bin/python3 -c 'import torch; torch.ones(8, 8) @ torch.ones(8, 8)
libs = sorted({l.split()[-1] for l in open("/proc/self/maps") if "blas" in l or "mkl" in l})
print(" ".join([l for l in libs if "libblas.so" in l] or libs))')
  if [[ $blas != *openblas* && $blas != *blis* && $blas != *mkl* ]]; then
    echo "compare_with_peer.sh: the only peer is Debian's PyTorch $v on the reference BLAS ($blas)," \
      "about 20x slower than with an optimized BLAS: its ratios would mean nothing." >&2
    echo "compare_with_peer.sh: run bench/install-peer.sh (PyTorch 2.x from PyPI, else libopenblas0-pthread)" >&2
    exit 2
  fi
  peer_py=/usr/bin/python3 peer_version=$v
  peer_from="PyTorch $v, Debian's python3-torch, BLAS $blas"
fi
# Does torch.compile work here? bench/install-peer.sh records it; re-check if stale or missing.
status=$peer_dir/compile-check.txt
if ! { [[ -f $status ]] && grep -qxF "python=$peer_py" "$status" && grep -qxF "torch=$peer_version" "$status"; }; then
  if [[ ${peer_version%%.*} -ge 2 ]]; then
    bench/install-peer.sh --check-compile >&2
  else
    mkdir -p "$peer_dir" 2>/dev/null || true
    printf 'python=%s\ntorch=%s\ncompile=unavailable\ndetail=torch.compile needs PyTorch 2.x\n' \
      "$peer_py" "$peer_version" >"$status" 2>/dev/null || status=/dev/null
  fi
fi
compile=$(sed -n 's/^compile=//p' "$status" 2>/dev/null); compile=${compile:-unavailable}
compile_detail=$(sed -n 's/^detail=//p' "$status" 2>/dev/null)
echo "== peer: $peer_from; torch.compile: $compile" >&2

mkdir -p "$out"
json="$out/mantissa.jsonl"
: >"$json"
: >"$out/report.txt"
config=configs/bench/gpt-ref.yaml

all=float32,bfloat16,float16,cbfloat16
echo "== mantissa $all on $config, interleaved ($steps timed steps each)" >&2
build/mantissa bench train --config "$config" --precision "$all" --interleave --steps "$steps" \
  --warmup 2 --json "$json" 2>"$out/mantissa.log" | tee -a "$out/report.txt"
# The memory-bound config (issue 12's targets): peak RSS and throughput, run by run.
mem_json="$out/mantissa-mem.jsonl"
: >"$mem_json"
if [[ $mem_steps -gt 0 ]]; then
  for p in ${all//,/ }; do
    echo "== mantissa $p on configs/bench/gpt-mem.yaml ($mem_steps timed steps)" >&2
    build/mantissa bench train --config configs/bench/gpt-mem.yaml --precision "$p" \
      --steps "$mem_steps" --warmup 1 --json "$mem_json" 2>"$out/mantissa-mem-$p.log" |
      tee -a "$out/report.txt"
  done
fi
# Where the time goes, float32 against bfloat16 (interleaved, 5 steps each).
echo "== mantissa float32,bfloat16 --profile" >&2
build/mantissa bench train --config "$config" --precision float32,bfloat16 --interleave --steps 5 \
  --warmup 2 --profile 2>/dev/null | tee -a "$out/report.txt"

# --- The peer's configuration: what it is, its BLAS, oneDNN, threads and the ISA oneDNN uses.
echo "== peer configuration" >&2
(cd /tmp && OMP_NUM_THREADS=$peer_threads "$peer_py" - "$peer_from" "$compile" "$compile_detail" "$peer_threads" <<'EOF'
import os, re, subprocess, sys, torch
frm, compile_ok, compile_detail, threads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
torch.set_num_threads(threads)
print(f"\npeer: {frm}")
print(f"peer python: {sys.executable}, torch at {os.path.dirname(torch.__file__)}")
cfg = torch.__config__.show()
keys = ("BLAS_INFO", "LAPACK_INFO", "USE_MKL", "USE_MKLDNN", "USE_OPENMP", "USE_CUDA")
print("peer build: " + ", ".join(f"{k}={m.group(1)}" for k in keys
                                 for m in [re.search(rf"\b{k}=([^,\s]*)", cfg)] if m))
for line in cfg.splitlines():
    if re.search(r"Math Kernel|MKL-DNN|oneDNN|LAPACK is|CPU capability|OpenBLAS|BLIS", line):
        print("peer build: " + line.strip(" -"))
cap = torch.backends.cpu.get_cpu_capability() if hasattr(torch.backends, "cpu") else "?"
print(f"peer runtime: ATen CPU capability {cap}, mkldnn available {torch.backends.mkldnn.is_available()}")
for line in torch.__config__.parallel_info().splitlines():
    if re.search(r"get_num_threads|get_num_interop|max_threads|parallel backend|NUM_THREADS", line):
        print("peer threads: " + line.strip())
a = torch.randn(256, 384); w = torch.randn(384, 384); a @ w
# The BLAS/OpenMP libraries torch loaded (not numpy's own, nor the CUDA wheel's GPU libraries).
libs = sorted({l.split()[-1] for l in open("/proc/self/maps")
               if re.search(r"blas|mkl|dnnl|gomp|iomp", l) and not re.search(r"/nvidia/|numpy", l)})
static = " (MKL and oneDNN linked statically into libtorch_cpu)" if "BLAS_INFO=mkl" in cfg else ""
print("peer libraries mapped: " + (" ".join(libs) or "none") + static)
# oneDNN's own report of the ISA it dispatches to, and the kernels a fp32 and a bf16 linear use.
probe = """
import torch; torch.set_num_threads(%d)
a = torch.randn(256, 384); w = torch.randn(384, 384)
torch.nn.functional.linear(a, w)
with torch.autocast('cpu', dtype=torch.bfloat16): torch.nn.functional.linear(a, w)
torch.nn.functional.conv2d(torch.randn(2, 32, 32, 32), torch.randn(32, 32, 3, 3))
""" % threads
env = dict(os.environ, ONEDNN_VERBOSE="1", DNNL_VERBOSE="1")
r = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
seen = set()
for line in (r.stdout + r.stderr).splitlines():
    f = line.split(",")
    if ",info," in line and re.search(r"oneDNN v|runtime:|isa:", line):
        print("peer oneDNN: " + ",".join(f[f.index("info") + 1:]))
    elif ",exec," in line and "cpu" in f:
        i = f.index("cpu"); src = re.search(r"src[_:]([a-z0-9]+)", line)
        kernel = f"{f[i + 1]} {f[i + 2]} (src {src.group(1) if src else '?'})"
        if kernel not in seen:
            seen.add(kernel); print("peer oneDNN kernel: " + kernel)
if not any(",info," in l for l in (r.stdout + r.stderr).splitlines()):
    print("peer oneDNN: no verbose output (the fp32 linear runs on the BLAS; oneDNN not used here)")
print(f"peer torch.compile: {compile_ok}" + (f" ({compile_detail})" if compile_detail else ""))
EOF
) | tee "$out/peer-config.txt" | tee -a "$out/report.txt"

# --- The peer runs: for each precision, eager and (where torch.compile works here) compiled, each
# with fused and explicit attention; one process per variant, each appending its JSON line.
peer_json="$out/peer.jsonl"
: >"$peer_json"
peer_modes=(eager)
[[ $compile == ok ]] && peer_modes+=(compiled)
peer_attentions=(fused explicit)
if [[ ${peer_version%%.*} -lt 2 ]]; then
  peer_attentions=(explicit)  # F.scaled_dot_product_attention is PyTorch 2.x
  echo "== peer: PyTorch $peer_version has no F.scaled_dot_product_attention: explicit attention only" >&2
fi
peer_failed=()  # "precision mode attention" of each compiled run that failed
peer_run() {  # precision, mode (eager | compiled), attention (fused | explicit)
  local precision=$1 mode=$2 attention=$3 extra=()
  local name="peer-$precision-$mode-$attention"
  [[ $mode == compiled ]] && extra=(--compile)
  echo "== peer $precision $mode $attention: $peer_from ($peer_steps timed steps after 2 warm-up," \
    "$peer_threads threads)" >&2
  if ! OMP_NUM_THREADS=$peer_threads "$peer_py" "$peer" --config "$config" --precision "$precision" \
    --attention "$attention" "${extra[@]}" --steps "$peer_steps" --warmup 2 \
    --threads "$peer_threads" --json "$peer_json" >"$out/$name.txt" 2>"$out/$name.log"; then
    echo "compare_with_peer.sh: the peer ($precision $mode $attention) failed; see $out/$name.log" >&2
    tail -n 20 "$out/$name.log" >&2
    [[ $mode == compiled ]] || exit 1
    peer_failed+=("$precision $mode $attention")
    return 0
  fi
  tee -a "$out/report.txt" <"$out/$name.txt"
}
for p in float32 bfloat16; do
  for mode in "${peer_modes[@]}"; do
    for attention in "${peer_attentions[@]}"; do peer_run "$p" "$mode" "$attention"; done
  done
done
failed_text=$(IFS=';'; echo "${peer_failed[*]}")

/usr/bin/python3 - "$json" "$mem_json" "$peer_from" "$compile" "$peer_json" "$failed_text" "$peer_steps" \
  <<'EOF' | tee "$out/ratios.txt"
import json, sys
def load(path):
    runs = {}
    for line in open(path):
        r = json.loads(line)
        runs[r["precision"].split(",")[0].split(" ")[0]] = r
    return runs
ours, mem = load(sys.argv[1]), load(sys.argv[2])
frm, compile_state, peer_json = sys.argv[3], sys.argv[4], sys.argv[5]
failed, peer_steps = [f for f in sys.argv[6].split(";") if f], sys.argv[7]
peer = [json.loads(line) for line in open(peer_json) if line.strip()]
def fmt(d, keys): return ", ".join(f"{k} {d[k]:.0f}" for k in keys if k in d)
def variant(r): return f"{'compiled' if r['compiled'] else 'eager'} {r['attention']}"
print("\nmantissa tokens/s (median): " + fmt({k: v["items_per_s"] for k, v in ours.items()}, ours))
print(f"peer: {frm}; torch.compile: {compile_state}")
if peer:
    r0 = peer[0]
    print(f"peer build: torch {r0['torch']}; {r0['mkl']}; {r0['onednn']}; ATen CPU capability "
          f"{r0['cpu_capability']}; {r0['threads']} threads; {r0['parameters']} parameters")
print(f"\npeer on GPT-ref, every variant (median of {peer_steps} timed steps after 2 warm-up):")
print(f"{'precision':<10} {'variant':<18} {'median step':>12} {'tokens/s':>9} {'peak RSS':>10} "
      f"{'last loss':>9} {'ours / this':>11}")
best = {}
for prec in ("float32", "bfloat16"):
    runs = [r for r in peer if r["precision"] == prec]
    for r in runs:
        ratio = f"{ours[prec]['items_per_s'] / r['tokens_per_s']:.2f}x" if prec in ours else "n/a"
        print(f"{prec:<10} {variant(r):<18} {r['median_step_s'] * 1e3:>9.1f} ms {r['tokens_per_s']:>9.0f} "
              f"{r['peak_rss_mib']:>6.0f} MiB {r['losses'][-1]:>9.4f} {ratio:>11}")
    for f in failed:
        if f.startswith(prec + " "):
            print(f"{prec:<10} {f.split(' ', 1)[1]:<18} {'failed (see its log)':>45}")
    if runs:
        best[prec] = max(runs, key=lambda r: r["tokens_per_s"])
        print(f"{prec:<10} {'best: ' + variant(best[prec]):<18} {'':>12} {best[prec]['tokens_per_s']:>9.0f}")
print("(peak RSS: each peer process's ru_maxrss, torch's own libraries included; a compiled run's"
      " includes the compiler's)")
# The ratios compare the same model and work per step: the peer builds GPT-ref from the same
# config, so its parameter count and tokens per step must be ours.
for r in peer:
    for key, theirs, mine in (("parameters", r["parameters"], ours.get(r["precision"], {}).get("parameters")),
                              ("tokens per step", r["tokens_per_step"], ours.get(r["precision"], {}).get("items_per_step"))):
        if mine is not None and theirs != mine:
            print(f"WARNING: peer {r['precision']} {variant(r)} has {theirs} {key}, ours {mine}: not the same model")
print()
def row(name, value): print(f"{name:<58} {value:>12}")
for prec in ("float32", "bfloat16"):
    label = f"our {prec} / peer's best {prec}" + (f" ({variant(best[prec])})" if prec in best else "")
    if prec not in ours: row(label, f"n/a (no {prec} run of ours)")
    elif prec not in best: row(label, "n/a (no peer run)")
    else: row(label, f"{ours[prec]['items_per_s'] / best[prec]['tokens_per_s']:.2f}x")
f32 = ours.get("float32")
# Issue 12's targets. Which speed target applies depends on the route bfloat16 took here.
amx = "bfloat16" in ours and "amx" in ours["bfloat16"].get("route", "")
print("\nroutes: " + "; ".join(v.get("route", "?") for v in ours.values()))
def check(name, value, target, ok):
    print(f"{name:<58} {value:>12}   target {target:<8} {'met' if ok else 'NOT met'}")
for cfg, runs in (("gpt-ref (interleaved)", ours), ("gpt-mem (run by run)", mem)):
    base = runs.get("float32")
    for k in ("bfloat16", "float16", "cbfloat16"):
        if not base or k not in runs: continue
        r = runs[k]["items_per_s"] / base["items_per_s"]
        if amx and cfg.startswith("gpt-ref"):
            want = 3.0 if k == "bfloat16" else 1.5
        else:
            want = 0.95
        check(f"{cfg} tokens/s: {k} / float32", f"{r:.3f}x", f">= {want}", r >= want)
base = mem.get("float32")
for k in ("bfloat16", "float16", "cbfloat16"):
    if base and k in mem:
        r = mem[k]["peak_rss_mib"] / base["peak_rss_mib"]
        check(f"gpt-mem peak RSS: {k} / float32 ({mem[k]['peak_rss_mib']:.0f} / {base['peak_rss_mib']:.0f} MiB)",
              f"{r:.3f}x", "<= 0.60", r <= 0.60)
print()
for k, v in ours.items():
    print(f"MFU {k:<10} {100 * v['mfu']:5.1f} %  ({v['gflops']:.1f} GFLOP/s of a {v['gemm_peak_gflops']:.1f} GFLOP/s GEMM peak measured in the same process)")
bf16 = ours.get("bfloat16")
n = min(200, len(f32["losses"]), len(bf16["losses"])) if f32 and bf16 else 0  # steps 1..n, warm-up included
if n >= 10:
    a = sum(f32["losses"][n - 10:n]) / 10
    b = sum(bf16["losses"][n - 10:n]) / 10
    check(f"loss, mean of steps {n - 9}-{n}: float32 {a:.4f} vs bfloat16 {b:.4f}", f"{abs(a - b):.4f}",
          "<= 0.05", abs(a - b) <= 0.05)
EOF
cat "$out/ratios.txt" >>"$out/report.txt"
echo "results in $out" >&2
