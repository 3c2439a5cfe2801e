#!/usr/bin/env bash
# gpu.sh [STEP...] — the GPU check and fp16 benchmark, run on a machine with an NVIDIA GPU (an
# H100 here). Steps (default: all, in this order):
#   tests      the CUDA tests (kernels and backend against the CPU references)
#   calibrate  `ecocompute calibrate`: idle W, read/copy bandwidth, fp16 GEMM, pJ/byte
#   ours       ecocompute fp16 decode with --energy: Llama-2-7B batch 1/8/64, TinyLlama-1.1B and
#              Llama-3.1-8B batch 1; prompt 512, 256 new tokens
#   torch      the same shapes in PyTorch + transformers eager (the seeds' stack), metered by
#              `ecocompute meter --trace` (bench/torch_baseline.py); skipped without torch;
#              TORCH_COMPILE=1 adds static cache + torch.compile at batch 1
# and prints one table last (bench/report.py). Results go to $OUT (or bench-out/). Builds with
# scripts/build.sh unless build/ecocompute exists (bench/device-prep.sh makes it for machines
# without network). Every figure comes from ecocompute's own meter.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench-out}
mkdir -p "$out"
[ -x build/ecocompute ] || bash scripts/build.sh build -DCMAKE_CUDA_ARCHITECTURES=90
bin=$(pwd)/build/ecocompute
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(tests calibrate ours torch)
export XDG_DATA_HOME=$(pwd)/$out/xdg # calibrate saves here; run --energy reads it back
python=${PYTHON:-python3}
[ -x /opt/torch/.venv/bin/python ] && python=${PYTHON:-/opt/torch/.venv/bin/python}

nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee "$out/gpu.txt"
git rev-parse --short=12 HEAD 2>/dev/null | tee "$out/commit.txt" || true

shapes=("Llama-2-7B 1" "Llama-2-7B 8" "Llama-2-7B 64" "TinyLlama-1.1B 1" "Llama-3.1-8B 1")
for step in "${steps[@]}"; do
    case $step in
    tests)
        ctest --test-dir build -L gpu --output-on-failure 2>&1 | tee "$out/tests.txt" || true ;;
    calibrate)
        "$bin" calibrate --idle 5 --seconds 6 | tee "$out/calibrate.txt" ;;
    ours)
        rm -f "$out/ecocompute.csv"
        for s in "${shapes[@]}"; do
            read -r model batch <<<"$s"
            "$bin" run --model "$model" --precision fp16 --device cuda --batch "$batch" \
                --prompt-len 512 --gen 256 --energy --idle 5 --format csv >"$out/run.csv"
            [ -s "$out/ecocompute.csv" ] || head -1 "$out/run.csv" >"$out/ecocompute.csv"
            tail -n +2 "$out/run.csv" >>"$out/ecocompute.csv"
        done
        cut -d, -f1,4,8-14 "$out/ecocompute.csv" ;;
    torch)
        if ! "$python" -c 'import torch, transformers' 2>/dev/null; then
            echo "torch: not importable with $python; skipped"
            continue
        fi
        runs=$(printf '%s\n' "${shapes[@]}" | tr ' ' ':' | paste -sd,)
        modes=(eager)
        [ "${TORCH_COMPILE:-0}" = 1 ] && modes+=(compile)
        for mode in "${modes[@]}"; do
            [ "$mode" = compile ] && runs=Llama-2-7B:1
            "$bin" meter --interval 20 --trace "$out/torch_$mode.trace.csv" -- "$python" \
                bench/torch_baseline.py --mode "$mode" --runs "$runs" \
                --marks "$out/torch_$mode.marks.csv" >"$out/torch_$mode.meter.txt"
            python3 bench/trace_energy.py "$out/torch_$mode.trace.csv" \
                "$out/torch_$mode.marks.csv" >"$out/torch_$mode.energy.csv"
        done ;;
    *) echo "gpu.sh: unknown step '$step' (tests calibrate ours torch)" >&2; exit 2 ;;
    esac
done
echo
[ -s "$out/ecocompute.csv" ] && python3 bench/report.py "$out" | tee "$out/table.txt"
