#!/usr/bin/env bash
# The first README command: install what is missing, build, run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
# The main job. Until the trainer lands it shows the number formats mantissa computes in.
build/mantissa formats
