#!/usr/bin/env bash
# Builds mantissa with AddressSanitizer and UndefinedBehaviorSanitizer (g++, -O1, frame
# pointers kept, every report fatal) into build-sanitize/ and runs the default test suite
# under them (ctest -LE long). Any report fails the run. Run by hand (CI runs the README's
# second command only); docs/reliability.md records a run and its cost.
#   scripts/sanitize.sh [ctest args...]
# The install test is left out: it builds a consumer of the installed library with the
# consumer's own flags, which do not link the sanitizer runtimes the library then needs.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
  -DMANTISSA_SANITIZE=address,undefined -DMANTISSA_BUILD_BENCH=OFF -DMANTISSA_WERROR=ON \
  -DMANTISSA_BUILD_PYTHON=OFF >/dev/null  # a sanitized module would need its runtime preloaded into python
cmake --build build-sanitize -j"$(nproc)"
# halt_on_error: the first report fails its test. detect_leaks: a leak is a report too, except
# Open MPI's own (scripts/sanitize-lsan.supp; the dist.mpi tests run under mpirun), which the
# slow unwinder lets the suppressions see. allocator_may_return_null: an allocation past the
# address space fails as it does unsanitized (the library's refusal is what tests check).
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=1:strict_string_checks=1:fast_unwind_on_malloc=0:allocator_may_return_null=1
export LSAN_OPTIONS="suppressions=$PWD/scripts/sanitize-lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
ctest --test-dir build-sanitize --output-on-failure -j"$(nproc)" -LE long -E '^install\.' "$@"
