#!/usr/bin/env bash
# The repository's C++ as .clang-format says: clang-format --dry-run --Werror over every C++
# file of src/, include/, apps/, tests/, bench/, examples/ and python/src/. Exits 0 when all are
# formatted, 1 naming the files that are not (run clang-format -i on them), and 77 (the test's
# "skipped") with a line saying so when clang-format is not installed.
#   check_format.sh [ROOT] (default: this script's parent's parent)
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
tool=${CLANG_FORMAT:-clang-format}
if ! command -v "$tool" >/dev/null 2>&1; then
  echo "check_format: SKIPPED: $tool is not installed (apt-get install clang-format)"
  exit 77
fi
cd "$root" || exit 1
mapfile -t files < <(find src include apps tests bench examples python/src -type f \
  \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cc' \) -not -path '*/corpus/*' \
  2>/dev/null | sort)
if [ ${#files[@]} -eq 0 ]; then
  echo "check_format: no C++ files under $root"
  exit 1
fi
bad=()
for f in "${files[@]}"; do
  "$tool" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -ne 0 ]; then
  printf 'check_format: not formatted (clang-format -i %s):\n' "$("$tool" --version | head -1)"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "check_format: ${#files[@]} files formatted ($("$tool" --version | head -1))"
