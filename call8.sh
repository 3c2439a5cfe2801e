export LD_LIBRARY_PATH=$PWD/.devpack/lib EC_SHARED_DIR=$PWD/.devpack
SPEED_RUNS="Llama-2-7B:1:fp8 Llama-3.1-8B:1:fp8 Llama-2-7B:8:fp8" ROUNDS=2 bash bench/ab-speed.sh .devpack/lib .abpack/f8s3c2.so.xz .abpack/f8s3.so.xz
SPEED_RUNS="Llama-2-7B:1:fp8" bash bench/ab-speed.sh .abpack/f8s3.so.xz .abpack/f8s3c2.so.xz .devpack/lib
