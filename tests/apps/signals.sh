#!/usr/bin/env bash
# signals.sh CASE MANTISSA CONFIG DIR
#   TERM, INT: a training run sent SIGTERM (SIGINT) once it has logged a step must write a
#              checkpoint, say "interrupted by SIG..." and exit 143 (130); the checkpoint loads
#              and the run resumes from it.
#   two:       a second trainer on the same run directory is refused, naming the first's pid.
# The signal is sent after the first metrics record, never on a timer: the test holds on a
# loaded machine.
set -u
case=$1 cli=$2 config=$3 dir=$4
rm -rf "$dir" && mkdir -p "$dir"
run=(train --config "$config" --mode train --set trainer.init.checkpoint.dir="$dir/run"
     --set trainer.init.logging.log_steps=1)
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
want=$([[ $case == TERM ]] && echo 143 || echo 130)
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
