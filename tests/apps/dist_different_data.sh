#!/usr/bin/env bash
# dist_different_data.sh MPI_RUN CLI CONFIG DIR: two ranks read the corpus at one relative
# path, each from its own directory (different bytes): the job must refuse to start, naming
# the rank whose data differs from rank 0's.
set -euo pipefail
mpi_run=$1 cli=$2 config=$3 dir=$4
rm -rf "$dir" && mkdir -p "$dir/r0" "$dir/r1"
head -c 3000 README.md >"$dir/r0/corpus.txt"
tail -c 3000 README.md >"$dir/r1/corpus.txt"
exec bash "$mpi_run" 2 \
  --expect "\[1,0\]<stderr>:mantissa: error: dist: rank 0 of 2: rank 1 differs from rank 0 in the training and validation data" \
  --reject "step [0-9]+/" --expect "mpirun exited [1-9]" \
  -- bash -c 'cd "$1/r${OMPI_COMM_WORLD_RANK}" && exec "$0" train --config "$2" --set trainer.init.checkpoint.dir="$1/run" --set trainer.fit.train_dataloader.batch_size=4 --set trainer.fit.train_dataloader.path=corpus.txt' \
  "$cli" "$dir" "$config"
