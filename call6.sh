export LD_LIBRARY_PATH=$PWD/.devpack/lib EC_SHARED_DIR=$PWD/.devpack
timeout 120 .devpack/bin/test_cuda_nf4_fp8 2>&1 | tail -3
timeout 150 .devpack/bin/test_cuda_model 2>&1 | tail -2
SPEED_RUNS="TinyLlama-1.1B:32:nf4 TinyLlama-1.1B:32:fp8 Llama-2-7B:32:nf4 Llama-2-7B:32:fp8 Qwen2.5-3B:32:nf4 TinyLlama-1.1B:64:fp8 Llama-2-7B:64:nf4" bash bench/ab-speed.sh .abpack/s14f.so.xz .devpack/lib
SPEED_RUNS="TinyLlama-1.1B:32:fp16 Llama-2-7B:32:fp16 Qwen2.5-3B:32:fp16" bash bench/ab-speed.sh .devpack/lib .abpack/s14f.so.xz
