#!/usr/bin/env bash
# session 42 temporary device script: kernel tests, then fp8 / nf4 on Llama-2-7B
set -u
export LD_LIBRARY_PATH=$PWD/.devpack/lib EC_SHARED_DIR=$PWD/.devpack XDG_DATA_HOME=$OUT/xdg
L=.devpack/lib
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cat .devpack/commit.txt
.devpack/bin/test_cuda_kernels 2>&1 | grep -E "PASSED|FAILED|test\(s\) run|rror|fail|clustered" | tail -12
SPEED_RUNS="Llama-2-7B:1:fp8 Llama-2-7B:1:nf4" bash bench/ab-speed.sh .abpack/s41.so.xz $L
