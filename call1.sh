set -e
export LD_LIBRARY_PATH=$PWD/.devpack/lib EC_SHARED_DIR=$PWD/.devpack
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 200 .devpack/bin/test_cuda_int8 2>&1 | tail -8
SPEED_RUNS="Llama-2-7B:1:int8 Llama-2-7B:1:int8-mixed Llama-2-7B:8:int8 Llama-2-7B:8:int8-mixed" ROUNDS=2 bash bench/ab-speed.sh .abpack/s14f.so.xz .devpack/lib
SPEED_RUNS="Llama-2-7B:1:int8 Llama-2-7B:1:int8-mixed Llama-2-7B:1:fp16" bash bench/ab-speed.sh .devpack/lib .abpack/s14f.so.xz
