#!/usr/bin/env bash
# session 42 temporary device script: attention bounds
set -u
export LD_LIBRARY_PATH=$PWD/.devpack/lib EC_SHARED_DIR=$PWD/.devpack XDG_DATA_HOME=$OUT/xdg
L=.devpack/lib
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
SPEED_RUNS="Llama-3.1-8B:1:fp8 Llama-3.1-8B:1:fp16 Llama-2-7B:1:int8" bash bench/ab-speed.sh $L ECOCOMPUTE_CUDA_ATTX=1@$L ECOCOMPUTE_CUDA_ATTX=2@$L
