export LD_LIBRARY_PATH=$PWD/.devpack/lib EC_SHARED_DIR=$PWD/.devpack
timeout 100 .devpack/bin/test_cuda_nf4_fp8 2>&1 | tail -2
SPEED_RUNS="Llama-2-7B:1:fp8 Llama-2-7B:8:fp8" ROUNDS=2 bash bench/ab-speed.sh .abpack/f8s3c2.so.xz .devpack/lib
SPEED_RUNS="Llama-2-7B:1:fp8 Llama-2-7B:8:fp8" bash bench/ab-speed.sh .devpack/lib .abpack/f8s3c2.so.xz
