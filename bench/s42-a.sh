#!/usr/bin/env bash
# session 42 temporary device script: clustered decode attention, split grain
set -u
export LD_LIBRARY_PATH=$PWD/.devpack/lib EC_SHARED_DIR=$PWD/.devpack XDG_DATA_HOME=$OUT/xdg
L=.devpack/lib
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cat .devpack/commit.txt
SPEED_RUNS="Llama-3.1-8B:1:fp8 Llama-2-7B:1:int8 Llama-3.1-8B:1:fp16 Llama-2-7B:1:fp16 Llama-3.1-8B:8:fp8" bash bench/ab-speed.sh .abpack/s41.so.xz $L ECOCOMPUTE_CUDA_ATTN_GRAIN=8@$L
