#!/usr/bin/env bash
# Configures and builds mantissa (Release) into build/.
#   scripts/build.sh [cmake configure args...]             everything (library, program, tests, benchmarks)
#   MANTISSA_TARGET=mantissa_cli scripts/build.sh          only the program and the library
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$(nproc)" ${MANTISSA_TARGET:+--target "$MANTISSA_TARGET"}
