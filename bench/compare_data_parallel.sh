#!/usr/bin/env bash
# Data parallel on one machine (issue 15): GPT-ref trained by 1 process x 2 threads against
# 2 processes x 1 thread (mpirun), and, on 2 processes, the all-reduce overlapped with the
# backward (buckets of 25 MiB and of 4 MiB) against one all-reduce after it. The
# configurations take turns, round after round, so a machine whose load changes affects them
# alike; the report gives each one's median throughput over the rounds and the ratios.
#
#   bench/compare_data_parallel.sh [--rounds N] [--steps N] [--warmup N] [--config FILE]
#                                  [--out DIR] [--set a.b.c=value ...]
#
#   --rounds N   turns of every configuration (default 3)
#   --steps N    timed steps per run (default 10), after --warmup untimed ones (default 2)
#   --config     default configs/bench/gpt-ref.yaml (bfloat16, POL 1; --set to change)
#   --out DIR    where the JSON lines and logs go (default bench-results/dp-<UTC time>)
#
# Needs: build/mantissa (scripts/build.sh), mpirun (scripts/install-deps.sh), 2 cores. Runs as
# root too (--allow-run-as-root), in containers too (no single-copy shared memory).
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=3 steps=10 warmup=2 config=configs/bench/gpt-ref.yaml
out="bench-results/dp-$(date -u +%Y%m%dT%H%M%SZ)"
sets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --config) config=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --set) sets+=(--set "$2"); shift 2 ;;
    *) echo "compare_data_parallel.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
export OMP_WAIT_POLICY=passive OMPI_MCA_btl_vader_single_copy_mechanism=none
bench=(build/mantissa bench train --config "$config" --steps "$steps" --warmup "$warmup"
       "${sets[@]}")
mpi=(mpirun -np 2 --allow-run-as-root --bind-to core -x OMP_NUM_THREADS=1 -x OMP_WAIT_POLICY
     -x OMPI_MCA_btl_vader_single_copy_mechanism)

{
  echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
  echo "Open MPI: $(mpirun --version | sed -n 1p)"
  echo "config: $config ${sets[*]:-}; $rounds rounds of $warmup + $steps steps each"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/machine.txt"

run() {  # run NAME COMMAND...
  local name=$1
  shift
  echo "== round $r: $name" | tee -a "$out/log.txt"
  "$@" --json "$out/$name.jsonl" >>"$out/log.txt" 2>&1
}
for ((r = 1; r <= rounds; ++r)); do
  run one_process_2_threads env OMP_NUM_THREADS=2 "${bench[@]}"
  run two_processes_overlap_25mib "${mpi[@]}" "${bench[@]}"
  run two_processes_overlap_4mib "${mpi[@]}" "${bench[@]}" --set trainer.init.dist.bucket_cap_mb=4
  run two_processes_after_backward "${mpi[@]}" "${bench[@]}" \
    --set trainer.init.dist.overlap=false --set trainer.init.dist.bucket_cap_mb=65536
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/machine.txt"

python3 - "$out" <<'EOF'
import json, statistics, sys, pathlib
out = pathlib.Path(sys.argv[1])
names = ["one_process_2_threads", "two_processes_overlap_25mib", "two_processes_overlap_4mib",
         "two_processes_after_backward"]
rows = {}
for n in names:
    runs = [json.loads(l) for l in (out / f"{n}.jsonl").read_text().splitlines() if l.strip()]
    rows[n] = {
        "tps": statistics.median(r["items_per_s"] for r in runs),
        "all": [round(r["items_per_s"]) for r in runs],
        "step": statistics.median(r["median_step_ms"] for r in runs),
        "wait": statistics.median(r.get("median_allreduce_wait_ms", 0) for r in runs),
        "buckets": runs[0].get("buckets", 0),
        "mb": runs[0].get("bytes_sent_per_step", 0) / 1e6,
        "precision": runs[0]["precision"],
    }
base = rows[names[0]]["tps"]
print(f"\n{'configuration':32} {'tokens/s (median)':>18} {'per round':>22} {'step ms':>8} "
      f"{'buckets':>7} {'MB sent':>8} {'wait ms':>8} {'vs 1x2':>7}")
for n in names:
    r = rows[n]
    print(f"{n:32} {r['tps']:18.0f} {str(r['all']):>22} {r['step']:8.1f} {r['buckets']:7d} "
          f"{r['mb']:8.1f} {r['wait']:8.1f} {r['tps'] / base:7.3f}")
print(f"\nprecision: {rows[names[0]]['precision']}")
EOF
