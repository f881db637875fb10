#!/usr/bin/env bash
# Installs every Debian package mantissa needs, and only those that are missing.
# Idempotent: a second run installs nothing and exits 0.
#   scripts/install-deps.sh          build, test (chromium for the report's browser test) and data packages
#   scripts/install-deps.sh --peer   also python3-torch with OpenBLAS (the fallback PyTorch peer for
#                                    benchmarks; bench/install-peer.sh installs the stronger one)
set -euo pipefail

packages=(
  build-essential cmake g++ pkg-config clang-format
  libdnnl-dev          # oneDNN: matmul and convolution kernels
  libyaml-cpp-dev      # YAML configs
  nlohmann-json3-dev   # safetensors headers, metrics JSON lines
  libcli11-dev         # command-line parsing
  libfmt-dev           # formatting
  zlib1g-dev           # IDX .gz datasets
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin  # Open MPI: the dist layer, and mpirun for its tests
  python3-dev pybind11-dev    # the Python package (python/, docs/python.md)
  python3-pip python-is-python3  # its Python dependencies (scripts/install-python.sh); `python`
  chromium             # tests: the browser test opens the precision report headless
  bible-kjv            # KJV corpus (the `bible` program)
  dataset-fashion-mnist  # /usr/share/datasets/fashion-mnist/*.gz
)
if [[ "${1:-}" == "--peer" ]]; then
  packages+=(python3-torch libopenblas0-pthread)  # reference BLAS: ~20x slower, no peer
elif [[ -n "${1:-}" ]]; then
  echo "install-deps.sh: unknown argument '$1' (expected nothing or --peer)" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages: ${missing[*]}; run this script as root" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only if they are absent (a fresh machine) or the install fails.
if ! ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1; then
  apt-get update -qq
fi
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "install-deps: done"
