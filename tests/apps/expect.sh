#!/usr/bin/env bash
# expect.sh [--setup CMD] [--then CMD] [--not REGEX] STATUS REGEX -- COMMAND...
# Runs CMD (sh -c; must succeed), then COMMAND, and passes when COMMAND exits with STATUS, its
# stderr matches REGEX (an extended regular expression over the whole stderr, newlines
# included) and not the --not REGEX, and the --then CMD (sh -c) succeeds afterwards. With
# STATUS 2 (an error) stderr must hold exactly one "mantissa: error: ..." line: the error,
# said once.
set -u
setup="" then="" reject=""
while [[ $1 == --* ]]; do
  case $1 in
    --setup) setup=$2 ;;
    --then) then=$2 ;;
    --not) reject=$2 ;;
    *) echo "expect.sh: unknown option $1"; exit 1 ;;
  esac
  shift 2
done
want=$1
regex=$2
shift 3
if [[ -n $setup ]] && ! sh -c "$setup"; then
  echo "setup failed: $setup"
  exit 1
fi
err=$("$@" 2>&1 >/dev/null)
status=$?
if [[ $status -ne $want ]]; then
  echo "expected exit status $want, got $status; stderr: $err"
  exit 1
fi
if ! [[ $err =~ $regex ]]; then
  echo "stderr '$err' does not match '$regex'"
  exit 1
fi
if [[ -n $reject && $err =~ $reject ]]; then
  echo "stderr '$err' matches '$reject', which it must not"
  exit 1
fi
if [[ $want -eq 2 ]] && [[ $(printf '%s\n' "$err" | grep -c '^mantissa: error: ') -ne 1 ]]; then
  echo "expected one 'mantissa: error:' line: $err"
  exit 1
fi
if [[ -n $then ]] && ! sh -c "$then"; then
  echo "check after the run failed: $then"
  exit 1
fi
echo "ok ($status): $err"
