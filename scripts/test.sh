#!/usr/bin/env bash
# The second README command: install what is missing, build, run the test suite.
# The default suite skips tests labelled `long`; run those with: ctest --test-dir build -L long
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh -DMANTISSA_WERROR=ON
ctest --test-dir build --output-on-failure -j"$(nproc)" -LE long
