#!/usr/bin/env bash
# Configures and builds mantissa (Release) into build/.
#   scripts/build.sh [cmake configure args...]             everything (library, program, tests, benchmarks)
#   MANTISSA_TARGET=mantissa_cli scripts/build.sh          only the program and the library
#   MANTISSA_TARGET="mantissa_cli mantissa_python" ...     several targets
# The Python package (python/) is built for the interpreter `python3` on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
python=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null || true)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${python:+-DPython3_EXECUTABLE="$python"} "$@" >/dev/null
# shellcheck disable=SC2086  # MANTISSA_TARGET: one or more target names
cmake --build build -j"$(nproc)" ${MANTISSA_TARGET:+--target $MANTISSA_TARGET}
