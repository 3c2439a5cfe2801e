#!/usr/bin/env bash
# session 40, call 1 (temporary): experiment correctness, A/B, gate/up source profile
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.devpack/lib EC_SHARED_DIR=$PWD/.devpack XDG_DATA_HOME=$OUT/xdg
L=.devpack/lib
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cat .devpack/commit.txt
for e in 10 5; do
  echo "== test_cuda_nf4_fp8 EXP=$e"
  ECOCOMPUTE_CUDA_QMMA_EXP=$e timeout 150 .devpack/bin/test_cuda_nf4_fp8 2>&1 | grep -E "PASSED|FAILED|test\(s\) run|ERROR" | tail -6
done
echo "== test_cuda_model EXP=10"
ECOCOMPUTE_CUDA_QMMA_EXP=10 timeout 150 .devpack/bin/test_cuda_model 2>&1 | grep -E "PASSED|FAILED|test\(s\) run|ERROR" | tail -6
SPEED_RUNS="Llama-3.1-8B:1:fp8 Llama-2-7B:1:fp8" timeout 240 bash bench/ab-speed.sh $L \
  ECOCOMPUTE_CUDA_QMMA_EXP=1@$L ECOCOMPUTE_CUDA_QMMA_EXP=2@$L ECOCOMPUTE_CUDA_QMMA_EXP=4@$L \
  ECOCOMPUTE_CUDA_QMMA_EXP=8@$L
ncu=/usr/local/cuda/bin/ncu
timeout 150 $ncu --clock-control none --kernel-name regex:qmma_kernel --launch-skip 150 \
  --launch-count 1 --set full --import-source no -o $OUT/gateup .devpack/bin/ecocompute run \
  --model Llama-3.1-8B --batch 1 --precision fp8 --kernels fused --device cuda --prompt-len 64 \
  --gen 4 >/dev/null 2>$OUT/ncu.err
tail -3 $OUT/ncu.err
$ncu -i $OUT/gateup.ncu-rep --page details > $OUT/gateup-details.txt 2>&1
$ncu -i $OUT/gateup.ncu-rep --page source --print-source sass --csv > $OUT/gateup-sass.csv 2>&1
grep -E "Duration|DRAM Throughput|Registers|Grid Size|Issue Slots|Warp Cycles Per Issued" $OUT/gateup-details.txt | head -12
