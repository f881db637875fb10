#!/usr/bin/env bash
# The second README command: install what is missing, build, run the test suite (the C++
# tests and the Python package's pytest suite, ctest's python.pytest).
# The default suite skips tests labelled `long`; run those with: ctest --test-dir build -L long
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh -DMANTISSA_WERROR=ON -DMANTISSA_BUILD_PYTHON=ON
scripts/install-python.sh --test  # numpy, pytest, ml_dtypes; `import mantissa` in python3
ctest --test-dir build --output-on-failure -j"$(nproc)" -LE long
