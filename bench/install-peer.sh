#!/usr/bin/env bash
# Installs the strongest PyTorch peer this machine can have, for bench/compare_with_peer.sh.
# Only the benchmark peer comes from the Python package index: mantissa itself never does.
#
#   bench/install-peer.sh                  install (idempotent: a second run installs nothing)
#   bench/install-peer.sh --check-compile  only (re)run the torch.compile check
#   bench/install-peer.sh --debian         only the fallback below (Debian's python3-torch + OpenBLAS)
#
# 1. A PyTorch 2.x wheel from the package index ($MANTISSA_PEER_TORCH, default torch==2.15.0)
#    into a venv OUTSIDE the repository: $MANTISSA_PEER_DIR/venv (default /opt/mantissa-peer/venv),
#    built on Debian's /usr/bin/python3. The x86_64 Linux wheel there is the CUDA build (it pulls
#    the nvidia-* wheels, several GB); it runs on the CPU all the same, with MKL and oneDNN inside.
# 2. When the package index is unreachable or the install fails: Debian's python3-torch (1.13)
#    with libopenblas0-pthread, which it reaches through the libblas.so.3 alternative (with the
#    reference BLAS it runs ~20x slower and is no peer at all).
# Then it checks whether torch.compile (inductor, C++ codegen through g++) trains a tiny model on
# this CPU and records the answer in $MANTISSA_PEER_DIR/compile-check.txt, which
# bench/compare_with_peer.sh reads to decide whether to run the peer with --compile too.
set -euo pipefail

peer_dir=${MANTISSA_PEER_DIR:-/opt/mantissa-peer}
venv=$peer_dir/venv
torch_spec=${MANTISSA_PEER_TORCH:-torch==2.15.0}
status=$peer_dir/compile-check.txt
base_python=/usr/bin/python3

log() { echo "install-peer: $*" >&2; }

apt_install() {  # Debian packages, only those missing
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  if [[ $(id -u) -ne 0 ]]; then
    log "missing Debian packages: ${missing[*]}; run this script as root"
    return 1
  fi
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1 || apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; }
}

torch_major() {  # python -> major version of its torch, or nothing
  "$1" -c 'import torch; print(torch.__version__.split(".")[0])' 2>/dev/null || true
}

# The peer's python, as compare_with_peer.sh picks it: the venv's PyTorch 2.x, else Debian's.
peer_python() {
  if [[ -x $venv/bin/python && $(torch_major "$venv/bin/python") -ge 2 ]] 2>/dev/null; then
    echo "$venv/bin/python"
  else
    echo "$base_python"
  fi
}

check_compile() {
  local py version
  py=$(peer_python)
  version=$("$py" -c 'import torch; print(torch.__version__)')
  mkdir -p "$peer_dir"
  if [[ $(torch_major "$py") -lt 2 ]]; then
    printf 'python=%s\ntorch=%s\ncompile=unavailable\ndetail=torch.compile needs PyTorch 2.x\n' \
      "$py" "$version" >"$status"
    log "torch.compile: unavailable (torch $version)"
    return 0
  fi
  log "checking torch.compile with a tiny model (torch $version, $py) ..."
  local detail rc=0
  detail=$(cd /tmp && timeout 900 "$py" - 2>&1 <<'EOF'
import torch, torch.nn as nn
torch.set_num_threads(2); torch.manual_seed(0)
m = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.LayerNorm(128), nn.Linear(128, 8))
x = torch.randn(16, 64); y = torch.randint(0, 8, (16,))
c = torch.compile(m)
for bf16 in (False, True):
    with torch.autocast('cpu', dtype=torch.bfloat16, enabled=bf16):
        a = nn.functional.cross_entropy(m(x).float(), y)
        b = nn.functional.cross_entropy(c(x).float(), y)
    b.backward()
    assert abs(a.item() - b.item()) < (5e-2 if bf16 else 1e-4), (bf16, a.item(), b.item())
    assert all(p.grad is not None for p in c.parameters())
print("torch.compile trained a tiny MLP, fp32 and bf16 autocast, forward and backward")
EOF
) || rc=$?
  if [[ $rc -eq 0 ]]; then
    printf 'python=%s\ntorch=%s\ncompile=ok\ndetail=%s\n' "$py" "$version" "$(tail -n 1 <<<"$detail")" >"$status"
    log "torch.compile: works on this CPU"
  else
    printf 'python=%s\ntorch=%s\ncompile=failed\ndetail=%s\n' "$py" "$version" \
      "$(grep -v '^\s*$' <<<"$detail" | tail -n 3 | tr '\n' ' ')" >"$status"
    log "torch.compile: FAILED (exit $rc); the peer runs eager only. Last lines:"
    tail -n 20 <<<"$detail" >&2
  fi
}

install_pypi() {
  apt_install python3-venv python3-dev g++ || return 1
  if [[ -x $venv/bin/python && $(torch_major "$venv/bin/python") -ge 2 ]] 2>/dev/null; then
    local have want=${torch_spec#torch==}
    have=$("$venv/bin/python" -c 'import torch; print(torch.__version__)')
    if [[ $torch_spec != torch==* || ${have%%+*} == "$want" ]]; then
      log "PyTorch $have already in $venv"
      return 0
    fi
    log "$venv has PyTorch $have, want $torch_spec"
  fi
  log "probing the package index for $torch_spec ..."
  if ! (cd /tmp && timeout 120 "$base_python" -m pip index versions torch >/dev/null 2>&1); then
    log "the package index is unreachable"
    return 1
  fi
  [[ -x $venv/bin/python ]] || { mkdir -p "$peer_dir" && "$base_python" -m venv "$venv"; }
  log "pip install $torch_spec into $venv (the CUDA wheel and its nvidia-* wheels: several GB)"
  (cd /tmp && "$venv/bin/python" -m pip install --no-input --progress-bar off "$torch_spec" numpy) || return 1
  [[ $(torch_major "$venv/bin/python") -ge 2 ]]
}

install_debian() {
  apt_install python3-torch libopenblas0-pthread || return 1
  local alt=libblas.so.3-x86_64-linux-gnu openblas=/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3
  if [[ $(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3) != *openblas* ]]; then
    if [[ $(id -u) -ne 0 ]]; then log "libblas.so.3 is the reference BLAS; as root: update-alternatives --set $alt $openblas"; return 1; fi
    update-alternatives --set "$alt" "$openblas"
  fi
  log "Debian PyTorch $("$base_python" -c 'import torch; print(torch.__version__)') with $(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3)"
}

case "${1:-}" in
  --check-compile) check_compile; cat "$status"; exit 0 ;;
  --debian) debian_only=1 ;;
  "") debian_only=0 ;;
  *) log "unknown argument '$1' (expected nothing, --check-compile or --debian)"; exit 2 ;;
esac

if [[ $debian_only -eq 1 ]]; then
  install_debian
elif install_pypi; then
  log "peer: PyTorch $("$venv/bin/python" -c 'import torch; print(torch.__version__)') from the package index in $venv"
else
  log "falling back to Debian's python3-torch with OpenBLAS"
  install_debian
fi
# Re-check torch.compile only when the recorded answer is for another python or torch.
py=$(peer_python)
version=$("$py" -c 'import torch; print(torch.__version__)')
if [[ -f $status ]] && grep -qxF "python=$py" "$status" && grep -qxF "torch=$version" "$status"; then
  log "torch.compile: $(grep '^compile=' "$status") (recorded in $status)"
else
  check_compile
fi
