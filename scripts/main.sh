#!/usr/bin/env bash
# The first README command: install what is missing, build, run the main job: the default
# GPT on the KJV Bible (configs/gpt-kjv.yaml, a few minutes on 2 cores), ending with the
# validation perplexity and a text sample from the trained model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# The program and the Python package only: the tests build in the second command.
MANTISSA_TARGET="mantissa_cli mantissa_python" scripts/build.sh -DMANTISSA_BUILD_PYTHON=ON
scripts/install-python.sh  # numpy; `import mantissa` in python3 (docs/python.md)
# A fresh run each time (the run directory holds its checkpoints and metrics.jsonl).
rm -rf runs/gpt-kjv
build/mantissa train --config configs/gpt-kjv.yaml
echo "--- sample (build/mantissa generate --checkpoint runs/gpt-kjv) ---"
build/mantissa generate --checkpoint runs/gpt-kjv --prompt "And God said" --length 300 --seed 1
