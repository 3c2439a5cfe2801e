#!/usr/bin/env bash
# session 42 temporary device script: clustered decode attention, restricted
set -u
export LD_LIBRARY_PATH=$PWD/.devpack/lib EC_SHARED_DIR=$PWD/.devpack XDG_DATA_HOME=$OUT/xdg
L=.devpack/lib
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cat .devpack/commit.txt
for t in test_cuda_kernels test_cuda_model; do
  echo "== $t"; timeout 200 .devpack/bin/$t 2>&1 | grep -E "PASSED|FAILED|test\(s\) run|ERROR|rror" | tail -6
done
SPEED_RUNS="Llama-3.1-8B:1:fp8 Llama-3.1-8B:1:fp16 Llama-2-7B:1:int8 Llama-2-7B:1:fp16 Llama-3.1-8B:8:fp8 Mistral-7B-v0.2:1:fp8 Mistral-7B-v0.2:1:fp16" bash bench/ab-speed.sh .abpack/s41.so.xz $L
