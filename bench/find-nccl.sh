#!/usr/bin/env bash
# find-nccl.sh — prints the NCCL library a tensor-parallel run should load when the dynamic
# loader has none (src/engine/cuda/nccl.c reads ECOCOMPUTE_NCCL_LIBRARY): PyTorch's wheel
# (site-packages/nvidia/.../libnccl.so.2), which the GPU machine has. Prints nothing when the
# loader finds libnccl.so.2 itself or no copy exists. Used by bench/pack-env.sh:
#   lib=$(bash bench/find-nccl.sh) && [ -z "$lib" ] || export ECOCOMPUTE_NCCL_LIBRARY=$lib
set -euo pipefail
[ -z "${ECOCOMPUTE_NCCL_LIBRARY:-}" ] || exit 0
! /sbin/ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2 ' || exit 0
"${PYTHON:-python3}" - 2>/dev/null <<'PY' || true
import glob, site
dirs = site.getsitepackages() + [site.getusersitepackages()]
hits = [f for d in dirs for f in glob.glob(d + "/nvidia/**/libnccl.so.2", recursive=True)]
if hits:
    print(sorted(hits)[0])
PY
