#!/usr/bin/env bash
# install_and_use.sh BUILD_DIR SOURCE_DIR WORK_DIR
# Installs the built mantissa into WORK_DIR/prefix, then builds examples/custom_loop.cpp (and,
# with CMake, examples/seed_api.cpp: the vendor's example transcribed) against the installed
# package twice, as a user would: with CMake (find_package) and with
# pkg-config, and runs both. Nothing from the source or build tree is on either path.
set -euo pipefail
build=$1 source=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
test -x "$prefix/bin/mantissa"
"$prefix/bin/mantissa" formats >/dev/null

# CMake: examples/CMakeLists.txt, configured on its own (find_package(mantissa CONFIG REQUIRED)).
cmake -S "$source/examples" -B "$work/cmake-build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
grep -q "mantissa_DIR:PATH=$prefix/" "$work/cmake-build/CMakeCache.txt" ||
  { echo "find_package did not take mantissa from $prefix"; exit 1; }
cmake --build "$work/cmake-build" -j1 >/dev/null
echo "cmake consumer: $("$work/cmake-build/custom_loop" | tail -n 1)"
echo "cmake consumer of the vendor's example: $("$work/cmake-build/seed_api" | tail -n 1)"

# pkg-config.
export PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name mantissa.pc)")
# shellcheck disable=SC2046
g++ -std=c++20 -O1 "$source/examples/custom_loop.cpp" -o "$work/custom_loop_pc" \
  $(pkg-config --cflags --libs mantissa)
echo "pkg-config consumer: $("$work/custom_loop_pc" | tail -n 1)"
