#!/usr/bin/env bash
# mpi_run.sh NP [--expect REGEX]... [--reject REGEX]... [--within SECONDS] [MPIRUN_OPTION...]
#            -- PROGRAM [ARGS...]
# Runs PROGRAM on NP ranks under mpirun (as root too; more ranks than cores allowed), one
# OpenMP thread a rank. Without --expect: passes when mpirun exits 0. With --expect: passes
# when the output (stdout and stderr of every rank and of mpirun, then a line "mpirun exited
# STATUS ...") matches every --expect REGEX (grep -E), no --reject REGEX, and the run took at
# most SECONDS (a whole number, default 30): for runs whose output tells what happened.
# Exits 77 (ctest's SKIP_RETURN_CODE) when mpirun is not installed.
set -uo pipefail
np=$1
shift
expects=() rejects=() within=30 options=()
while [[ $# -gt 0 && $1 != "--" ]]; do
  case $1 in
    --expect) expects+=("$2"); shift 2 ;;
    --reject) rejects+=("$2"); shift 2 ;;
    --within) within=$2; shift 2 ;;
    *) options+=("$1"); shift ;;
  esac
done
shift  # --
if ! command -v mpirun >/dev/null; then
  echo "SKIP: mpirun not found (install openmpi-bin: scripts/install-deps.sh)"
  exit 77
fi
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
# Shared memory without the single-copy path (CMA), which containers often forbid
# (process_vm_readv blocked): the tests check results, not the transport's speed.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
start=$(date +%s%N)
output=$(mpirun -np "$np" --oversubscribe --allow-run-as-root --tag-output "${options[@]}" "$@" 2>&1)
status=$?
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
elapsed=$((elapsed_ms / 1000)).$(printf %03d $((elapsed_ms % 1000)))
output+=$'\n'"mpi_run: mpirun exited $status after ${elapsed} s"
echo "$output"
if [[ ${#expects[@]} -eq 0 ]]; then
  exit "$status"
fi
for expect in "${expects[@]}"; do
  if ! grep -Eq -- "$expect" <<<"$output"; then
    echo "mpi_run: FAIL: the output does not match: $expect"
    exit 1
  fi
done
for reject in "${rejects[@]}"; do
  if grep -Eq -- "$reject" <<<"$output"; then
    echo "mpi_run: FAIL: the output matches what it must not: $reject"
    exit 1
  fi
done
if ((elapsed_ms > within * 1000)); then
  echo "mpi_run: FAIL: took ${elapsed} s, more than the bound of ${within} s"
  exit 1
fi
echo "mpi_run: the output names what it should, within ${within} s"
