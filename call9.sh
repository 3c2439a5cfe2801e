export LD_LIBRARY_PATH=$PWD/.devpack/lib EC_SHARED_DIR=$PWD/.devpack
timeout 120 .devpack/bin/test_cuda_nf4_fp8 2>&1 | tail -2
timeout 150 .devpack/bin/test_cuda_model 2>&1 | tail -2
SPEED_RUNS="Llama-2-7B:1:fp8 Llama-2-7B:1:fp16 Llama-2-7B:8:fp8 Llama-2-7B:16:fp8 Mistral-7B-v0.2:1:fp8 Mistral-7B-v0.2:1:fp16" bash bench/ab-speed.sh .abpack/s14f.so.xz .devpack/lib
SPEED_RUNS="Llama-2-7B:1:fp8 Llama-2-7B:1:fp16" bash bench/ab-speed.sh .devpack/lib .abpack/s14f.so.xz
