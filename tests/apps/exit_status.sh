#!/usr/bin/env bash
# exit_status.sh COMMAND...: runs COMMAND, then prints "exit status N" on stdout and exits 0
# (so that under mpirun every rank's status is seen, not only the first one mpirun reports).
"$@"
echo "exit status $?"
