#!/usr/bin/env bash
# session 40, call 4 (temporary): fp8's upper pair converted from the high half
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.devpack/lib EC_SHARED_DIR=$PWD/.devpack XDG_DATA_HOME=$OUT/xdg
L=.devpack/lib B=.abpack/s38.so.xz
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cat .devpack/commit.txt
mkdir -p /tmp/b && xz -dc $B >/tmp/b/libecocompute.so
for lib in /tmp/b/libecocompute.so $L/libecocompute.so; do
  /usr/local/cuda/bin/cuobjdump -sass -arch sm_90a $lib >/tmp/sass.txt 2>/dev/null
  echo "$lib: E4M3.UNPACK_B $(grep -c 'E4M3.UNPACK_B' /tmp/sass.txt), with .H1 $(grep -c 'E4M3.UNPACK_B.*\.H1' /tmp/sass.txt)"
done
echo "== test_cuda_nf4_fp8"
timeout 150 .devpack/bin/test_cuda_nf4_fp8 2>&1 | grep -E "PASSED|FAILED|test\(s\) run|ERROR" | tail -6
echo "== test_cuda_model"
timeout 150 .devpack/bin/test_cuda_model 2>&1 | grep -E "PASSED|FAILED|test\(s\) run|ERROR" | tail -6
ROUNDS=2 SPEED_RUNS="Llama-3.1-8B:1:fp8 Llama-2-7B:1:fp8" timeout 200 bash bench/ab-speed.sh $B $L
SPEED_RUNS="Mistral-7B-v0.2:1:fp8 Qwen2.5-3B:1:fp8 Llama-3.1-8B:8:fp8" timeout 150 bash bench/ab-speed.sh $B $L
