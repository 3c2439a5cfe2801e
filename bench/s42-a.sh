#!/usr/bin/env bash
# session 42 temporary device script: int8 release / skip experiment
set -u
export LD_LIBRARY_PATH=$PWD/.devpack/lib EC_SHARED_DIR=$PWD/.devpack XDG_DATA_HOME=$OUT/xdg
L=.devpack/lib
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ECOCOMPUTE_CUDA_I8X=rel .devpack/bin/test_cuda_int8 2>&1 | grep -E "PASSED|FAILED|test\(s\) run|ERROR" | tail -5
SPEED_RUNS="Llama-2-7B:1:int8" ROUNDS=2 bash bench/ab-speed.sh .abpack/s41.so.xz ECOCOMPUTE_CUDA_I8X=rel@$L ECOCOMPUTE_CUDA_I8X=skip@$L ECOCOMPUTE_CUDA_I8X=relskip@$L
