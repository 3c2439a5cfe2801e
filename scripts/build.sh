#!/usr/bin/env bash
# build.sh [BUILD_DIR] [cmake options...] — configures and builds ecocompute (Release-like).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}; shift || true
# nvcc is often installed outside PATH; the CUDA backend is built when it is found.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
# Configure output is noise unless it fails; then show all of it (set -e stops here).
if ! log=$(cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" 2>&1); then
  printf '%s\n' "$log" >&2
  exit 1
fi
cmake --build "$dir" -j "$(nproc)"
