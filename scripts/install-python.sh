#!/usr/bin/env bash
# Makes `import mantissa` work in python3 (the interpreter `python3` on PATH, the one
# scripts/build.sh builds the package for) after the build:
#   - installs numpy from the Python package index when the interpreter lacks it (with
#     --test also pytest and ml_dtypes, the test dependencies);
#   - links the package built in build/python into the interpreter's site-packages (the file
#     mantissa-build.pth: rebuilding updates what `import mantissa` loads, nothing is copied);
#   - checks that `import mantissa` loads that package.
# Idempotent. `pip install .` is the other way to install (docs/python.md).
#   scripts/install-python.sh          numpy and the link
#   scripts/install-python.sh --test   also pytest and ml_dtypes
set -euo pipefail
cd "$(dirname "$0")/.."
modules=(numpy)
if [[ "${1:-}" == "--test" ]]; then
  modules+=(pytest ml_dtypes)
elif [[ -n "${1:-}" ]]; then
  echo "install-python.sh: unknown argument '$1' (expected nothing or --test)" >&2
  exit 2
fi
py=$(python3 -c 'import sys; print(sys.executable)')
package_dir="$PWD/build/python"
if ! compgen -G "$package_dir/mantissa/_core*.so" >/dev/null; then
  echo "install-python.sh: $package_dir/mantissa has no extension module; build first" \
    "(MANTISSA_TARGET=mantissa_python scripts/build.sh -DMANTISSA_BUILD_PYTHON=ON)" >&2
  exit 1
fi

# Debian's own interpreter is "externally managed" (PEP 668): pip installs into
# /usr/local/lib/python3.*/dist-packages, beside Debian's packages, never over them.
pip_install() {
  echo "install-python: installing $* for $py"
  PIP_BREAK_SYSTEM_PACKAGES=1 "$py" -m pip install -q --disable-pip-version-check "$@"
}
missing=()
for m in "${modules[@]}"; do
  "$py" -c "import $m" 2>/dev/null || missing+=("$m")
done
if [[ " ${missing[*]} " == *" numpy "* ]]; then
  pip_install numpy
fi
specs=()
for m in "${missing[@]}"; do
  case "$m" in
    numpy) ;;
    # ml_dtypes 0.6 needs numpy 2: with numpy 1 (Debian's python3-numpy, which python3-torch
    # needs) the last release for numpy 1, so that pip leaves numpy alone.
    ml_dtypes) "$py" -c 'import numpy, sys; sys.exit(int(numpy.__version__.split(".")[0]) < 2)' &&
      specs+=(ml_dtypes) || specs+=("ml_dtypes<0.6") ;;
    *) specs+=("$m") ;;
  esac
done
if [[ ${#specs[@]} -gt 0 ]]; then
  pip_install "${specs[@]}"
fi

site=$("$py" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
mkdir -p "$site"
echo "$package_dir" >"$site/mantissa-build.pth"
loaded=$(cd / && "$py" -c 'import mantissa, os; print(os.path.dirname(os.path.dirname(mantissa.__file__)))')
if [[ "$loaded" != "$package_dir" ]]; then
  echo "install-python.sh: python3 loads another mantissa from $loaded (pip uninstall mantissa)" >&2
  exit 1
fi
echo "install-python: python3 ($py) imports mantissa from $package_dir"
