#!/usr/bin/env bash
# The default test suite N times in a row under `ctest -j2` while a second `ctest -j2` of
# another build runs beside it in a loop (docs/reliability.md, "The suite beside another suite").
#
#   scripts/stress.sh BUILD_DIR OTHER_BUILD_DIR [RUNS] [OUT_DIR]
#
#   BUILD_DIR        the build whose suite is counted (e.g. build)
#   OTHER_BUILD_DIR  another build of the project (a second checkout's build directory); its
#                    suite runs beside, over and over, until the counted runs are done
#   RUNS             how many counted runs (default 3)
#   OUT_DIR          logs and summary.txt (default stress-<UTC time>)
#
# Exits 0 when every counted run and every run beside passed.
set -uo pipefail
[[ $# -ge 2 ]] || { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
build=$1 other=$2 runs=${3:-3} out=${4:-stress-$(date -u +%Y%m%dT%H%M%SZ)}
for d in "$build" "$other"; do
  [[ -f $d/CTestTestfile.cmake ]] || { echo "stress.sh: $d is not a build directory" >&2; exit 2; }
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "stress.sh: RUNS must be a positive integer, got '$runs'" >&2; exit 2; }
if [[ $(realpath "$build") == $(realpath "$other") ]]; then
  echo "stress.sh: BUILD_DIR and OTHER_BUILD_DIR are the same directory; two suites in one" \
    "build would share its test outputs (give a second checkout's build)" >&2
  exit 2
fi
mkdir -p "$out" || exit 2
# A reused OUT_DIR: its old stop file would end the loop beside before it starts.
rm -f "$out/stop" "$out/summary.txt" "$out/beside.txt" || exit 2
: >"$out/beside.txt" || exit 2
(
  i=0
  while [[ ! -e $out/stop ]]; do
    i=$((i + 1))
    ctest --test-dir "$other" -j2 -LE long >"$out/beside$i.log" 2>&1
    echo "beside $i rc=$?" >>"$out/beside.txt"
  done
) &
beside=$!
failed=0
for i in $(seq 1 "$runs"); do
  s=$(date +%s)
  ctest --test-dir "$build" -j2 -LE long >"$out/run$i.log" 2>&1
  rc=$?
  [[ $rc -eq 0 ]] || failed=1
  echo "run $i rc=$rc seconds=$(($(date +%s) - s)) $(grep 'tests passed' "$out/run$i.log")" |
    tee -a "$out/summary.txt"
done
touch "$out/stop"
wait "$beside"
tee -a "$out/summary.txt" <"$out/beside.txt"
grep -q 'rc=[1-9]' "$out/beside.txt" && failed=1
[[ -s $out/beside.txt ]] || { echo "stress.sh: no run beside finished" | tee -a "$out/summary.txt" >&2; failed=1; }
exit $failed
