#!/usr/bin/env bash
# gpu.sh — the GPU check run on a machine with an NVIDIA GPU (H100 here): builds for sm_90,
# runs the CUDA tests (kernels against CPU references, the backend against the CPU backend),
# then times fp16 decode for `small` and Llama-2-7B (synthetic weights) and prints a short table
# last, with Llama-2-7B's share of the batch-1 bandwidth roofline (13.5 GB read per token,
# DESIGN.md §6: ~3.03 TB/s measured read bandwidth on an H100 → ~225 tok/s). About 4-6 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
# A GPU machine without network or -dev packages runs the build made by bench/device-prep.sh.
[ -x build/ecocompute ] || bash scripts/build.sh build -DCMAKE_CUDA_ARCHITECTURES=90
ctest --test-dir build -R 'cuda|gpu' --output-on-failure

bin=build/ecocompute
rows=()
run() { # model batch prompt gen
    local csv
    csv=$("$bin" run --model "$1" --precision fp16 --device cuda --batch "$2" --prompt-len "$3" \
        --gen "$4" --format csv | tail -n 1)
    rows+=("$1,$2,$3,$4,$csv")
}
run small 1 512 256
run Llama-2-7B 1 512 256
run Llama-2-7B 64 512 256

echo
printf '%-12s %6s %7s %5s %9s %12s %12s %9s\n' model batch prompt gen load_s prefill_tok/s decode_tok/s roofline
for r in "${rows[@]}"; do
    IFS=, read -r model batch prompt gen _m _p _d _b _pt _nt load _ps pre _ds dec _rest <<<"$r"
    roof=-
    if [ "$model" = Llama-2-7B ] && [ "$batch" = 1 ]; then
        roof=$(awk -v t="$dec" 'BEGIN { printf "%.0f%%", 100 * t / 225 }')
    fi
    printf '%-12s %6s %7s %5s %9s %12s %12s %9s\n' "$model" "$batch" "$prompt" "$gen" "$load" \
        "$pre" "$dec" "$roof"
done
