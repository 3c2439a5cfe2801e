export LD_LIBRARY_PATH=$PWD/.devpack/lib EC_SHARED_DIR=$PWD/.devpack
git log --oneline -1 2>/dev/null || true
timeout 120 .devpack/bin/test_cuda_nf4_fp8 2>&1 | tail -2
timeout 150 .devpack/bin/test_cuda_model 2>&1 | tail -2
runs=""
for m in Qwen2.5-0.5B TinyLlama-1.1B Qwen2-1.5B Qwen2.5-3B; do for p in fp16 nf4 fp8; do runs="$runs $m:64:$p"; done; done
SPEED_RUNS="$runs Llama-2-7B:64:fp16 Llama-2-7B:64:fp8" timeout 420 bash bench/gpu.sh speed 2>&1 | tail -16
