#!/usr/bin/env bash
# signals.sh CASE MANTISSA CONFIG DIR
#   TERM, INT, HUP: a training run sent SIGTERM (SIGINT, SIGHUP) once it has logged a step
#              must write a checkpoint, say "interrupted by SIG..." and exit 143 (130, 129);
#              the checkpoint loads and the run resumes from it.
#   two:       a second trainer on the same run directory is refused, naming the first's pid.
#   second:    SIGTERM, then SIGINT (a different signal) while the first waits for a step
#              boundary, ends the program at once: killed by SIGINT (130).
#   pipe:      a run whose output's reader goes away (`| head -c 1`) trains on to its end:
#              exit 0, every checkpoint written, the end record "completed".
#   compare:   SIGTERM to `mantissa compare`'s own process alone (as docker or systemd send
#              it) reaches the run it trains: the run checkpoints, compare draws the report
#              and exits 143, and no training process is left behind.
# The signal is sent after the first metrics record, never on a timer: the test holds on a
# loaded machine.
set -u
case=$1 cli=$2 config=$3 dir=$4
rm -rf "$dir" && mkdir -p "$dir"
run=(train --config "$config" --mode train --set trainer.init.checkpoint.dir="$dir/run"
     --set trainer.init.logging.log_steps=1)
if [[ $case == pipe ]]; then
  "$cli" "${run[@]}" --set trainer.init.loop.max_steps=40 --set trainer.init.checkpoint.steps=20 \
    2>&1 | head -c 1 >/dev/null
  status=${PIPESTATUS[0]}
  [[ $status -eq 0 ]] || { echo "FAIL: exit $status, expected 0"; exit 1; }
  [[ -f $dir/run/ckpt-00000040.safetensors ]] || { echo "FAIL: no checkpoint of step 40"; exit 1; }
  tail -n 1 "$dir/run/metrics.jsonl" | grep -Eq '"end":40,.*"outcome":"completed"' ||
    { echo "FAIL: $(tail -n 1 "$dir/run/metrics.jsonl")"; exit 1; }
  echo "ok: the reader went away, the run completed"
  exit 0
fi
if [[ $case == compare ]]; then
  "$cli" compare --config "$config" --formats float32,bfloat16 --steps 1000000 --throughput-steps 0 \
    --out "$dir/cmp" --set trainer.init.logging.log_steps=1 >"$dir/compare.out" 2>"$dir/compare.err" &
  pid=$!
  for _ in $(seq 600); do
    [[ -s $dir/cmp/float32/metrics.jsonl ]] && break
    sleep 0.1
  done
  kill -TERM "$pid"
  wait "$pid"
  status=$?
  sleep 0.5
  if pgrep -f -- "$dir/cmp" >/dev/null; then
    pkill -KILL -f -- "$dir/cmp"
    echo "FAIL: a training process was left behind"
    exit 1
  fi
  [[ $status -eq 143 ]] || { echo "FAIL: exit $status, expected 143: $(cat "$dir/compare.err")"; exit 1; }
  [[ -f $dir/cmp/report.html ]] || { echo "FAIL: no report"; exit 1; }
  tail -n 1 "$dir/cmp/float32/metrics.jsonl" | grep -q '"outcome":"interrupted","signal":"SIGTERM"' ||
    { echo "FAIL: $(tail -n 1 "$dir/cmp/float32/metrics.jsonl")"; exit 1; }
  [[ ! -e $dir/cmp/bfloat16 ]] || { echo "FAIL: the next format ran"; exit 1; }
  echo "ok: exit 143, report drawn, the run checkpointed"
  exit 0
fi
if [[ $case == second ]]; then
  # A step that does not end (a million micro-batches): the first signal's request waits for
  # a step boundary that never comes; only the second signal can end the program.
  "$cli" "${run[@]}" --set trainer.init.loop.grad_accum_steps=1000000 2>"$dir/first.err" &
  pid=$!
  for _ in $(seq 600); do
    grep -q '^training ' "$dir/first.err" 2>/dev/null && break
    sleep 0.1
  done
  sleep 0.5
  kill -TERM "$pid"
  sleep 0.5
  kill -INT "$pid"
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid"
    echo "FAIL: still running 10 s after the second signal"
    exit 1
  fi
  wait "$pid"
  status=$?
  [[ $status -eq 130 ]] || { echo "FAIL: exit $status, expected 130 (killed by SIGINT)"; exit 1; }
  echo "ok: the second signal ended the program at once"
  exit 0
fi
"$cli" "${run[@]}" --set trainer.init.loop.max_steps=1000000 2>"$dir/first.err" &
pid=$!
for _ in $(seq 600); do
  [[ -s $dir/run/metrics.jsonl ]] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
fail() {
  echo "FAIL: $*"
  kill -KILL "$pid" 2>/dev/null
  exit 1
}
[[ -s $dir/run/metrics.jsonl ]] || fail "the run logged no step: $(cat "$dir/first.err")"
if [[ $case == two ]]; then
  err=$("$cli" "${run[@]}" 2>&1 >/dev/null)
  status=$?
  [[ $status -eq 2 ]] || fail "second trainer: exit $status, expected 2: $err"
  [[ $err =~ ^mantissa:\ error:\ .*/run:\ another\ mantissa\ process\ \(pid\ $pid\)\ is\ using\ this\ run\ directory ]] ||
    fail "second trainer: $err"
  kill -TERM "$pid"
  wait "$pid"
  echo "ok: $err"
  exit 0
fi
kill -"$case" "$pid"
wait "$pid"
status=$?
want=$(case $case in TERM) echo 143 ;; HUP) echo 129 ;; *) echo 130 ;; esac)
err=$(cat "$dir/first.err")
[[ $status -eq $want ]] || fail "exit $status, expected $want: $err"
re="mantissa: interrupted by SIG$case at step ([0-9]+): checkpoint ([^ ]+) written; resume with --resume latest"
[[ $err =~ $re ]] || fail "no interruption message: $err"
step=${BASH_REMATCH[1]} ckpt=${BASH_REMATCH[2]}
[[ -f $ckpt ]] || fail "the checkpoint $ckpt is not there"
"$cli" inspect "$ckpt" | grep -Eq "global_step +$step\$" || fail "$ckpt does not hold step $step"
# Issue 27: the metrics end with a record of how the run ended: interrupted, by which signal.
tail -n 1 "$dir/run/metrics.jsonl" |
  grep -Eq "^\{\"checkpoint\":\"$ckpt\",\"end\":$step,.*\"outcome\":\"interrupted\",\"signal\":\"SIG$case\"" ||
  fail "no end record of the interruption: $(tail -n 1 "$dir/run/metrics.jsonl")"
"$cli" "${run[@]}" --resume latest --set trainer.init.loop.max_steps=$((step + 1)) 2>"$dir/resume.err" ||
  fail "resuming failed: $(cat "$dir/resume.err")"
grep -q "resumed from $ckpt at step $step" "$dir/resume.err" || fail "not resumed: $(cat "$dir/resume.err")"
tail -n 1 "$dir/run/metrics.jsonl" | grep -Eq "\"end\":$((step + 1)),.*\"outcome\":\"completed\"" ||
  fail "the resumed run did not record its completion: $(tail -n 1 "$dir/run/metrics.jsonl")"
echo "ok: exit $status; $(grep interrupted "$dir/first.err")"
