#!/usr/bin/env bash
# expect_error.sh REGEX -- COMMAND...
# Passes when COMMAND exits with status 2 and prints exactly one line on stderr matching REGEX.
set -u
regex=$1
shift 2
err=$("$@" 2>&1 >/dev/null)
status=$?
if [[ $status -ne 2 ]]; then
  echo "expected exit status 2, got $status; stderr: $err"
  exit 1
fi
lines=$(printf '%s\n' "$err" | wc -l)
if [[ $lines -ne 1 ]]; then
  echo "expected one line on stderr, got $lines: $err"
  exit 1
fi
if ! [[ $err =~ $regex ]]; then
  echo "stderr '$err' does not match '$regex'"
  exit 1
fi
echo "ok: $err"
