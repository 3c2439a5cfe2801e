#!/usr/bin/env bash
# gpu.sh STEP... — the GPU harness, run on a machine with an NVIDIA GPU from a copy of the working
# tree (CONTRIBUTING.md, "The GPU workflow"). Steps (default: tests calibrate ours torch):
#   tests        the CUDA tests (kernels and backend against the CPU references)
#   calibrate    `ecocompute calibrate`: idle W, read/copy bandwidth, fp16 GEMM, pJ/byte
#   sweep NAME   `ecocompute bench --config bench/sweeps/NAME.json` into $OUT/results.db, the
#                sampler at 10 ms; stops itself at SWEEP_BUDGET_S (default 480 s after the call
#                started, inside a device command's 600 s), letting the run in flight finish,
#                and exits 3: the same command again continues (bench resumes, nothing is
#                measured twice)
#   sweeps       lists the sweep files with what each measures
#   eval NAME    `ecocompute eval` of each model of sweep NAME (every format against float32),
#                into $OUT/eval/MODEL.csv; models done are skipped, the budget as for sweep
#   report       bench/report_sweep.py: the markdown tables of $OUT, into $OUT/sweep_report.md
#   ours, torch  ecocompute fp16 and PyTorch + transformers eager (bench/torch_baseline.py,
#                metered by `ecocompute meter --trace`; skipped without torch; TORCH_COMPILE=1
#                adds torch.compile at batch 1) on the same shapes, one table last (report.py)
#   trace        per-layer kernel timeline of TRACE_RUNS (MODEL:BATCH:PRECISION ..., CUPTI,
#                bench/kernel_trace.c), into $OUT/trace/
#   ncu          the batch-1 linears of one decode layer of NCU_RUNS (MODEL:PRECISION, packed
#                formats) under Nsight Compute (bench/ncu_report.py), into $OUT/ncu/
#   ncu-sass     one linear per NCU_SASS_RUNS entry (MODEL:PRECISION:LINEAR, LINEAR one of qkv o
#                gate-up down) with its warp stalls by SASS instruction (bench/ncu_sass_report.py)
# A new study is a sweep file, not shell code: the keys of `bench --config` (docs/measurement.md)
# and a "description". Overrides: SWEEP_ARGS (more bench flags, which override the file's, e.g.
# "--batch 1,8 --runs 3"), SWEEP_BUDGET_S, SWEEP_DB (an earlier call's results.db, carried in the
# working tree: copied to $OUT/results.db with its -wal file when $OUT has none, so the sweep
# continues it and the call returns all of it), EVAL_ARGS (more eval flags), ECOCOMPUTE (the
# binary), PYTHON, NCU.
#
# Results go to $OUT (or bench-out/). Runs the binaries of .devpack/ when the call carried it
# (bench/device-pack.sh), else builds with scripts/build.sh unless build/ecocompute exists
# (bench/device-prep.sh makes it for machines without network). Every figure comes from
# ecocompute's own meter.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench-out}
mkdir -p "$out"
out=$(cd "$out" && pwd) # absolute: XDG_DATA_HOME and the report need it
if [ -n "${SWEEP_DB:-}" ] && [ ! -e "$out/results.db" ]; then
    [ -f "$SWEEP_DB" ] || { echo "gpu.sh: SWEEP_DB '$SWEEP_DB': no such file" >&2; exit 2; }
    cp "$SWEEP_DB" "$out/results.db"
    [ ! -f "$SWEEP_DB-wal" ] || cp "$SWEEP_DB-wal" "$out/results.db-wal"
fi
source bench/pack-env.sh # .devpack's libraries on LD_LIBRARY_PATH, NCCL
# The real models test_cuda_model reads: the working tree's, which the device call carries (the
# path compiled into the test binaries is the development machine's).
export EC_TEST_DATA=${EC_TEST_DATA:-$(pwd)/tests/data}
if [ -n "${ECOCOMPUTE:-}" ]; then
    bin=$ECOCOMPUTE
elif [ -x "$pack/bin/ecocompute" ]; then
    bin=$pack/bin/ecocompute
else
    [ -x build/ecocompute ] || bash scripts/build.sh build -DCMAKE_CUDA_ARCHITECTURES=90a
    bin=$(pwd)/build/ecocompute
fi
export ECOCOMPUTE=$bin # for bench/report_sweep.py
[ $# -gt 0 ] || set -- tests calibrate ours torch
export XDG_DATA_HOME=$out/xdg # calibrate saves here; run --energy reads it back
python=${PYTHON:-python3}
[ -x /opt/torch/.venv/bin/python ] && python=${PYTHON:-/opt/torch/.venv/bin/python}

if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee "$out/gpu.txt"
fi
# The commit whose binaries run: the pack's (the device's copy of .git may be older).
if [ "$bin" = "$pack/bin/ecocompute" ] && [ -f "$pack/commit.txt" ]; then
    tee "$out/commit.txt" <"$pack/commit.txt"
else
    git rev-parse --short=12 HEAD 2>/dev/null | tee "$out/commit.txt" || true
fi

budget=${SWEEP_BUDGET_S:-480}
# remaining: seconds of this call's budget left (SECONDS counts from the script's start).
remaining() { echo $((budget - SECONDS)); }

# The sweep file of name $1 (its subshell exits 2 when there is none).
sweep_file() {
    local f=bench/sweeps/$1.json
    [ -n "$1" ] && [ -f "$f" ] && { echo "$f"; return; }
    echo "gpu.sh: no sweep '$1' (bash bench/gpu.sh sweeps lists them)" >&2
    exit 2
}

# Runs sweep $1 until it is complete (0) or the budget is spent (3).
run_sweep() {
    local name=$1 f log rc=0 extra=()
    f=$(sweep_file "$name") || return 2
    read -r -a extra <<<"${SWEEP_ARGS:-}"
    # A sweep started with less than a minute left would spend it loading a model.
    if [ "$(remaining)" -lt 60 ]; then
        echo "sweep $name: not started, $(remaining) s of the ${budget} s budget left"
        echo "run 'bash bench/gpu.sh sweep $name' again to continue"
        return 3
    fi
    mkdir -p "$out/sweep"
    log=$out/sweep/$name.log
    echo "ecocompute bench --config $f --db $out/results.db --interval 10 ${extra[*]}" | tee -a "$log"
    # SIGINT at the budget: bench finishes and stores the run in flight, prints the summary and
    # exits 1; -k: a run still going 90 s later is killed (it is not stored). stderr (progress,
    # the closing line) to the log and the terminal, the summary to a file.
    ( timeout -s INT -k 90 "$(remaining)" "$bin" bench --config "$f" --db "$out/results.db" \
        --interval 10 "${extra[@]}" </dev/null 2>&1 >"$out/sweep/$name.summary.txt" ) |
        tee -a "$log" >&2 || rc=$?
    if [ $rc -eq 0 ]; then
        echo "sweep $name: complete; $(grep -o '[0-9]* configurations finished ([0-9]* measured before)' "$log" | tail -1)"
    elif [ $rc -eq 124 ] || [ $rc -eq 137 ] || tail -1 "$log" | grep -q 'interrupted:'; then
        echo "sweep $name: stopped at the budget; $(grep -o '[0-9]* of [0-9]* configurations finished' "$log" | tail -1 || echo 'killed in a run (not stored)')"
        echo "run 'bash bench/gpu.sh sweep $name' again to continue"
        return 3
    else
        echo "sweep $name: bench failed (exit $rc); see $log" >&2
        return 1
    fi
}

# The value of key $2 ("models" joined by spaces, or "device") of sweep file $1.
sweep_key() {
    "$python" -c 'import json, sys
v = json.load(open(sys.argv[1])).get(sys.argv[2], "cpu")
print(" ".join(v) if isinstance(v, list) else v)' "$1" "$2"
}

# eval of every model of sweep $1 against float32 (every format: eval's default), skipping the
# models done. The float32 reference runs on the CPU: 4 bytes per parameter of host memory.
run_eval() {
    local f m models extra=()
    f=$(sweep_file "$1") || return 2
    read -r -a models <<<"$(sweep_key "$f" models)"
    read -r -a extra <<<"${EVAL_ARGS:-}"
    mkdir -p "$out/eval"
    for m in "${models[@]}"; do
        [ -s "$out/eval/$m.csv" ] && { echo "eval $m: done before"; continue; }
        if [ "$(remaining)" -lt 60 ]; then
            echo "eval $m: not started, budget spent; run the same step again"
            return 3
        fi
        echo "== eval $m"
        # Written under another name first: a file that exists is complete.
        if timeout "$(remaining)" "$bin" eval --model "$m" --device "$(sweep_key "$f" device)" \
            --tokens 24 --prompt-len 8 --format csv "${extra[@]}" </dev/null >"$out/eval/$m.csv.part"; then
            mv "$out/eval/$m.csv.part" "$out/eval/$m.csv"
            cat "$out/eval/$m.csv"
        else
            echo "eval $m: failed or cut by the budget; run the same step again" >&2
            return 3
        fi
    done
}

# The number of layers of catalog model $1.
layers_of() {
    "$bin" models --format csv | awk -F, -v m="$1" '
        NR == 1 {for (i = 1; i <= NF; i++) if ($i == "layers") c = i}
        $1 == m {print $c}'
}

# ncu_linears MODEL PRECISION FIRST COUNT NCU_ARGS...: Nsight Compute ($ncu, clocks left as they
# are, caches flushed) on COUNT batch-1 qmma_kernel launches of a packed format's decode, from
# linear FIRST (0 qkv, 1 o, 2 gate/up, 3 down) of layer 5 of the second decode step; a 64-token
# prompt runs the 64-row kernel (qgemm_kernel), so launch 0 is decode step 1's.
ncu_linears() {
    local model=$1 prec=$2 first=$3 count=$4
    shift 4
    "$ncu" --clock-control none --kernel-name regex:qmma_kernel \
        --launch-skip $((4 * $(layers_of "$model") + 20 + first)) --launch-count "$count" \
        "$@" "$bin" run --model "$model" --batch 1 --precision "$prec" --kernels fused \
        --device cuda --prompt-len 64 --gen 4
}

shapes=("Llama-2-7B 1" "Llama-2-7B 8" "Llama-2-7B 64" "TinyLlama-1.1B 1" "Llama-3.1-8B 1")
while [ $# -gt 0 ]; do
    step=$1
    shift
    case $step in
    tests)
        if [ -d "$pack/bin" ]; then
            for t in "$pack"/bin/test_cuda_*; do
                echo "== $(basename "$t")"
                "$t" 2>&1 | tail -n 25 || echo "FAILED: $(basename "$t")"
            done 2>&1 | tee "$out/tests.txt"
        else
            ctest --test-dir build -L gpu --output-on-failure 2>&1 | tee "$out/tests.txt" || true
        fi ;;
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
        cut -d, -f1,5,9-15 "$out/ecocompute.csv" ;;
    trace)
        # Where each decode step's time goes: every kernel's start and end from the CUPTI tracer
        # (bench/kernel_trace.c), per layer (bench/trace_report.py), for each TRACE_RUNS entry
        # (MODEL:BATCH:PRECISION, default Llama-2-7B batch 1 fp16 / int8 / nf4 / fp8).
        tracer=$pack/lib/libkernel_trace.so
        [ -f "$tracer" ] || { echo "trace: no $tracer (bench/device-pack.sh)"; continue; }
        mkdir -p "$out/trace"
        for run in ${TRACE_RUNS:-Llama-2-7B:1:fp16 Llama-2-7B:1:int8 Llama-2-7B:1:nf4 \
                Llama-2-7B:1:fp8}; do
            IFS=: read -r model batch prec <<<"$run"
            csv=$out/trace/$model-b$batch-$prec.csv
            CUDA_INJECTION64_PATH=$tracer KERNEL_TRACE_OUT=$csv "$bin" run --model "$model" \
                --batch "$batch" --precision "$prec" --kernels fused --device cuda \
                --prompt-len 512 --gen 32 --format csv >/dev/null
            echo "== $run"
            "$python" bench/trace_report.py "$csv" "$(layers_of "$model")"
        done
        ;;
    ncu)
        # The four batch-1 linears of a layer (ncu_linears), each run alone: CTAs, registers,
        # µs, DRAM and how evenly the SMs worked (bench/ncu_report.py), for each NCU_RUNS entry
        # (MODEL:PRECISION of a packed format, whose batch-1 step is four qmma_kernel launches a
        # layer; default Llama-3.1-8B:fp8). NCU: the ncu binary.
        ncu=${NCU:-/usr/local/cuda/bin/ncu}
        command -v "$ncu" >/dev/null || { echo "ncu: no $ncu"; continue; }
        mkdir -p "$out/ncu"
        for run in ${NCU_RUNS:-Llama-3.1-8B:fp8}; do
            IFS=: read -r model prec <<<"$run"
            csv=$out/ncu/$model-$prec.csv
            ncu_linears "$model" "$prec" 0 4 \
                --metrics "$("$python" bench/ncu_report.py --metrics)" --csv >"$csv"
            echo "== $run"
            "$python" bench/ncu_report.py "$csv"
        done
        ;;
    ncu-sass)
        # One of the ncu step's linears (ncu_linears), with the source counters (--set full):
        # the details page, then the SASS page read by bench/ncu_sass_report.py.
        ncu=${NCU:-/usr/local/cuda/bin/ncu}
        command -v "$ncu" >/dev/null || { echo "ncu-sass: no $ncu"; continue; }
        mkdir -p "$out/ncu"
        for run in ${NCU_SASS_RUNS:-Llama-3.1-8B:fp8:gate-up}; do
            IFS=: read -r model prec linear <<<"$run"
            case "$linear" in
            qkv) at=0 ;; o) at=1 ;; gate-up) at=2 ;; down) at=3 ;;
            *) echo "gpu.sh: ncu-sass: '$run': the linear is one of qkv o gate-up down" >&2
               exit 2 ;;
            esac
            rep=$out/ncu/$model-$prec-$linear
            ncu_linears "$model" "$prec" "$at" 1 --set full --import-source no -f -o "$rep" \
                >/dev/null
            "$ncu" -i "$rep.ncu-rep" --page details >"$rep-details.txt"
            "$ncu" -i "$rep.ncu-rep" --page source --print-source sass --csv >"$rep-sass.csv"
            echo "== $run"
            "$python" bench/ncu_sass_report.py "$rep-sass.csv"
        done
        ;;
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
    sweep | eval)
        [ $# -gt 0 ] || { echo "gpu.sh: $step needs a sweep name (bash bench/gpu.sh sweeps)" >&2; exit 2; }
        name=$1
        shift
        rc=0
        if [ "$step" = sweep ]; then run_sweep "$name" || rc=$?; else run_eval "$name" || rc=$?; fi
        [ $rc -eq 0 ] || exit $rc ;;
    sweeps)
        for f in bench/sweeps/*.json; do
            printf '%-20s %s\n' "$(basename "$f" .json)" "$(sweep_key "$f" description)"
        done ;;
    report)
        python3 bench/report_sweep.py "$out" | tee "$out/sweep_report.md" ;;
    *) echo "gpu.sh: unknown step '$step' (tests calibrate sweep NAME sweeps eval NAME report ours torch trace ncu ncu-sass)" >&2; exit 2 ;;
    esac
done
