#!/usr/bin/env bash
# build.sh [BUILD_DIR] [cmake options...] — configures and builds ecocompute (Release-like).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}; shift || true
# nvcc is often installed outside PATH; the CUDA backend is built when it is found.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)"
