set -e
export LD_LIBRARY_PATH=$PWD/.devpack/lib EC_SHARED_DIR=$PWD/.devpack
timeout 120 .devpack/bin/test_cuda_nf4_fp8 2>&1 | tail -4
mkdir -p /tmp/old && xz -dc .abpack/s14f.so.xz > /tmp/old/libecocompute.so
for lib in /tmp/old $PWD/.devpack/lib; do
  echo "== kernel_bench $lib"
  LD_LIBRARY_PATH=$lib:$PWD/.devpack/lib .devpack/bin/kernel_bench TinyLlama-1.1B 640 nf4,fp8 2>&1 | tail -24
done
SPEED_RUNS="TinyLlama-1.1B:64:nf4 TinyLlama-1.1B:64:fp8 Qwen2.5-3B:64:nf4 Qwen2.5-3B:64:fp8 Llama-2-7B:64:nf4" bash bench/ab-speed.sh .abpack/s14f.so.xz .devpack/lib
SPEED_RUNS="TinyLlama-1.1B:64:nf4 TinyLlama-1.1B:64:fp16 Qwen2.5-3B:64:nf4 Qwen2.5-3B:64:fp16" bash bench/ab-speed.sh .devpack/lib .abpack/s14f.so.xz
timeout 150 .devpack/bin/test_cuda_model 2>&1 | tail -3
