export LD_LIBRARY_PATH=$PWD/.devpack/lib EC_SHARED_DIR=$PWD/.devpack
for m in Llama-2-7B TinyLlama-1.1B Qwen2.5-3B Phi-3-mini-4k Qwen2.5-14B Qwen2-1.5B Llama-3.1-8B; do
for v in "" "EXP_GROUPS=1"; do
  echo "== $m [$v]"
  env $v .devpack/bin/kernel_bench $m 640 nf4,fp8 2>&1 | grep -E "  64  |rror" 
done; done
SPEED_RUNS="Llama-2-7B:64:nf4 Llama-2-7B:64:fp8 TinyLlama-1.1B:64:nf4 Qwen2.5-3B:64:fp8" bash bench/ab-speed.sh .abpack/s14f.so.xz .devpack/lib
