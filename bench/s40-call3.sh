#!/usr/bin/env bash
# session 40, call 3 (temporary): fp8 chunks prefetched into L2 before the wait
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.devpack/lib EC_SHARED_DIR=$PWD/.devpack XDG_DATA_HOME=$OUT/xdg
L=.devpack/lib
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cat .devpack/commit.txt
echo "== test_cuda_nf4_fp8 EXP=128"
ECOCOMPUTE_CUDA_QMMA_EXP=128 timeout 150 .devpack/bin/test_cuda_nf4_fp8 2>&1 | grep -E "PASSED|FAILED|test\(s\) run|ERROR" | tail -6
echo "== test_cuda_model EXP=64"
ECOCOMPUTE_CUDA_QMMA_EXP=64 timeout 150 .devpack/bin/test_cuda_model 2>&1 | grep -E "PASSED|FAILED|test\(s\) run|ERROR" | tail -6
ROUNDS=2 SPEED_RUNS="Llama-3.1-8B:1:fp8 Llama-2-7B:1:fp8" timeout 300 bash bench/ab-speed.sh $L \
  ECOCOMPUTE_CUDA_QMMA_EXP=64@$L ECOCOMPUTE_CUDA_QMMA_EXP=128@$L
SPEED_RUNS="Mistral-7B-v0.2:1:fp8 Qwen2.5-3B:1:fp8" timeout 120 bash bench/ab-speed.sh $L \
  ECOCOMPUTE_CUDA_QMMA_EXP=64@$L ECOCOMPUTE_CUDA_QMMA_EXP=128@$L
SPEED_RUNS="Llama-3.1-8B:1:fp16" timeout 60 bash bench/ab-speed.sh $L $L
