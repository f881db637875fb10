#!/usr/bin/env bash
# dist_faults.sh MODE MANTISSA CONFIG RUN_DIR
# A data-parallel `mantissa train` on 2 ranks (mpirun, one thread a rank), hit once its run
# directory holds two checkpoints:
#   kill      rank 1 gets SIGKILL: mpirun ends the job and names rank 1
#   recovery  the same under mpirun --enable-recovery, with a 2 s dist timeout: rank 0's own
#             bounded wait names rank 1
#   sigterm   mpirun gets SIGTERM: every rank stops after the same step, rank 0 writes that
#             step's checkpoint and says so
#   sigterm_one  only rank 1 gets SIGTERM: the same, and rank 0 names SIGTERM (the job's
#             signal), not the SIGINT it would say for a signal it did not catch itself
# Passes when the job ends within 30 s of the hit with the message MODE calls for, and every
# checkpoint left in RUN_DIR loads (mantissa inspect), with no temporary file beside them.
# Exits 77 (ctest's SKIP_RETURN_CODE) when mpirun is not installed.
set -uo pipefail
mode=$1 mantissa=$2 config=$3 run_dir=$4
if ! command -v mpirun >/dev/null; then
  echo "SKIP: mpirun not found (install openmpi-bin: scripts/install-deps.sh)"
  exit 77
fi
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive OMPI_MCA_btl_vader_single_copy_mechanism=none
rm -rf "$run_dir"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
options=(-np 2 --oversubscribe --allow-run-as-root --tag-output)
extra=()
if [[ $mode == recovery ]]; then
  options+=(--enable-recovery)
  extra=(--set trainer.init.dist.timeout_seconds=2)
fi
mpirun "${options[@]}" "$mantissa" train --mode train --config "$config" \
  --set "trainer.init.checkpoint.dir=$run_dir" --set trainer.init.loop.max_steps=1000000 \
  --set trainer.init.checkpoint.steps=20 --set trainer.init.checkpoint.keep=3 \
  --set trainer.init.logging.log_steps=20 "${extra[@]}" >"$log" 2>&1 &
job=$!

# Wait (up to 120 s) for the second checkpoint: training is under way on both ranks.
for ((i = 0; i < 1200; ++i)); do
  n=$(ls "$run_dir"/ckpt-*.safetensors 2>/dev/null | wc -l)
  ((n >= 2)) && break
  if ! kill -0 "$job" 2>/dev/null; then
    cat "$log"
    echo "dist_faults: FAIL: the job ended before its second checkpoint"
    exit 1
  fi
  sleep 0.1
done
if ((n < 2)); then
  cat "$log"
  kill -9 "$job"
  echo "dist_faults: FAIL: no second checkpoint within 120 s"
  exit 1
fi

rank_pid() {  # the pid of rank $1 among mpirun's children
  local p
  for p in $(pgrep -P "$job"); do
    if grep -qxz "OMPI_COMM_WORLD_RANK=$1" "/proc/$p/environ" 2>/dev/null; then
      echo "$p"
      return
    fi
  done
}

start=$(date +%s%N)
case $mode in
  kill | recovery)
    victim=$(rank_pid 1)
    if [[ -z $victim ]]; then
      kill -9 "$job"
      echo "dist_faults: FAIL: rank 1's process not found under mpirun ($job)"
      exit 1
    fi
    echo "dist_faults: SIGKILL to rank 1 (pid $victim)"
    kill -9 "$victim"
    ;;
  sigterm)
    echo "dist_faults: SIGTERM to mpirun (pid $job)"
    kill -TERM "$job"
    ;;
  sigterm_one)
    victim=$(rank_pid 1)
    [[ -n $victim ]] || { kill -9 "$job"; echo "dist_faults: FAIL: rank 1 not found"; exit 1; }
    echo "dist_faults: SIGTERM to rank 1 alone (pid $victim)"
    kill -TERM "$victim"
    ;;
  *)
    echo "usage: dist_faults.sh kill|recovery|sigterm|sigterm_one MANTISSA CONFIG RUN_DIR"
    exit 2
    ;;
esac

# The job must end within 30 s of the hit.
for ((i = 0; i < 300; ++i)); do
  kill -0 "$job" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$job" 2>/dev/null; then
  kill -9 "$job"
  cat "$log"
  echo "dist_faults: FAIL: the job still runs 30 s after the hit"
  exit 1
fi
wait "$job"
status=$?
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
cat "$log"
echo "dist_faults: mpirun exited $status, $((elapsed_ms / 1000)).$(printf %03d $((elapsed_ms % 1000))) s after the hit"

fail() {
  echo "dist_faults: FAIL: $1"
  exit 1
}
case $mode in
  kill) grep -Eq "process rank 1 .*exited on signal 9" "$log" || fail "mpirun does not name rank 1" ;;
  recovery)
    grep -Eq "\[1,0\]<stderr>:mantissa: error: dist: rank 0 of 2: no message for 2 s .*still waiting for rank 1" "$log" ||
      fail "rank 0 does not name rank 1"
    ;;
  sigterm | sigterm_one)
    step=$(sed -nE 's/^\[1,0\]<stderr>:mantissa: interrupted by SIG(TERM|INT) at step ([0-9]+):.*/\2/p' "$log")
    if [[ $mode == sigterm_one ]]; then
      grep -q "^\[1,0\]<stderr>:mantissa: interrupted by SIGTERM" "$log" ||
        fail "rank 0 does not name the job's signal, SIGTERM"
    fi
    [[ -n $step ]] || fail "rank 0 does not say where it stopped"
    grep -qE "\[1,1\]<std(out|err)>:.*interrupted" "$log" && fail "rank 1 reports too (rank 0 speaks for the job)"
    ckpt=$(printf "%s/ckpt-%08d.safetensors" "$run_dir" "$step")
    [[ -f $ckpt ]] || fail "no checkpoint of step $step"
    ;;
esac

# What is left is whole: every checkpoint loads, and the newest resumes (one process, two
# more steps), which deletes a temporary file a save cut short may have left.
ls "$run_dir"
for f in "$run_dir"/ckpt-*.safetensors; do
  "$mantissa" inspect "$f" >/dev/null || fail "$f does not load"
done
latest=$(ls "$run_dir"/ckpt-*.safetensors | tail -1)
latest_step=$((10#$(basename "$latest" .safetensors | sed 's/ckpt-//')))
"$mantissa" train --mode train --config "$config" --resume latest \
  --set "trainer.init.checkpoint.dir=$run_dir" --set "trainer.init.loop.max_steps=$((latest_step + 2))" \
  >"$log" 2>&1 || { cat "$log"; fail "the newest checkpoint ($latest) does not resume"; }
grep -q "resumed from $latest at step $latest_step" "$log" || { cat "$log"; fail "not resumed from $latest"; }
if ls "$run_dir"/*.tmp >/dev/null 2>&1; then fail "a temporary file is left in $run_dir"; fi
echo "dist_faults: ok ($mode): resumed from step $latest_step"
