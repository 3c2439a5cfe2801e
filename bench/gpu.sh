#!/usr/bin/env bash
# gpu.sh [STEP...] — the GPU check and fp16 benchmark, run on a machine with an NVIDIA GPU (an
# H100 here). Steps (default: all, in this order):
#   tests      the CUDA tests (kernels and backend against the CPU references)
#   calibrate  `ecocompute calibrate`: idle W, read/copy bandwidth, fp16 GEMM, pJ/byte
#   ours       ecocompute fp16 decode with --energy: Llama-2-7B batch 1/8/64, TinyLlama-1.1B and
#              Llama-3.1-8B batch 1; prompt 512, 256 new tokens
#   quant      issue #5: Llama-2-7B (6 injected outlier dims of magnitude 40) batch 1/8/64,
#              fp16 / int8 / int8-mixed x fused / reference kernels, with --energy (1 run each)
#   speed      fused-family speed and energy of SPEED_RUNS (MODEL:BATCH:PRECISION ..., default
#              Llama-2-7B at batch 1 / 8 / 64 in the fp16, int8 and packed formats), prompt 512,
#              128 new tokens, 1 run each, into $OUT/speed.csv
#   trace      per-layer kernel timeline of TRACE_RUNS (CUPTI, bench/kernel_trace.c), into
#              $OUT/trace/
#   ncu        the batch-1 linears of one decode layer of NCU_RUNS (MODEL:PRECISION, packed
#              formats), each alone under Nsight Compute (bench/ncu_report.py), into $OUT/ncu/
#   ncu-sass   one of those linears per NCU_SASS_RUNS entry (MODEL:PRECISION:LINEAR, LINEAR one
#              of qkv o gate-up down; default Llama-3.1-8B:fp8:gate-up) with every ncu section
#              and its warp stalls by SASS instruction (bench/ncu_sass_report.py), into $OUT/ncu/
#   torch      the same shapes in PyTorch + transformers eager (the seeds' stack), metered by
#              `ecocompute meter --trace` (bench/torch_baseline.py); skipped without torch;
#              TORCH_COMPILE=1 adds static cache + torch.compile at batch 1
# and prints one table last (bench/report.py).
#
# The sweeps of issues #5 (int8) and #7 (nf4/fp8) with `ecocompute bench`, into one results
# database $OUT/results.db (docs/results.md shows the published ones):
#   sweep:SEL  the parts of the sweeps whose name is SEL or starts with SEL- (sweep:int8,
#              sweep:packed-fused, sweep:packed-reference-14b, ...; `plan` lists them). Each
#              part is sized to finish well inside a device command's 600 s; the whole call stops
#              itself at SWEEP_BUDGET_S (default 480 s after it started), letting the run in
#              flight finish, and says what is left: run the same command again to continue
#              (bench resumes: nothing is measured twice)
#   eval[:SEL] `ecocompute eval`: KL and top-1 of each precision vs float32 per model, into
#              $OUT/eval/MODEL.csv (eval:small, eval:7b, eval:14b; models done are skipped)
#   outliers   int8-mixed outlier columns per layer (`run --verbose`) of the issue #5 models at
#              batch 1 and 64, into $OUT/outliers/ and $OUT/outliers.csv
#   report     bench/report_sweep.py: the markdown tables, into $OUT/sweep_report.md
#   plan       prints the bench command of every sweep part; runs nothing
# Overrides (for a CPU check of the pipeline: SWEEP_DEVICE=cpu SWEEP_MODELS=tiny,small
# SWEEP_PROMPT_LEN=16 SWEEP_GEN=8 SWEEP_IDLE=0 EVAL_MODELS=tiny,small OUTLIER_MODELS=small):
# SWEEP_MODELS, SWEEP_PRECISIONS, SWEEP_KERNELS, SWEEP_BATCHES, SWEEP_PROMPT_LEN, SWEEP_GEN
# replace the part's own lists; SWEEP_DEVICE (cuda), SWEEP_IDLE (5 s), SWEEP_WARMUP (1 run),
# SWEEP_RUNS (1 measured run per configuration),
# SWEEP_INTERVAL (10 ms sampler), SWEEP_BUDGET_S (480),
# SWEEP_MIN_START_S (120: no part is started with less of the budget left), SWEEP_DB (an
# earlier call's results.db, carried in the working tree: copied to $OUT/results.db, with its
# -wal file, when $OUT has none, so that the sweep continues it and the call returns all of it);
# EVAL_MODELS, EVAL_PRECISIONS, EVAL_TOKENS (24), EVAL_PROMPT_LEN (8); OUTLIER_MODELS,
# OUTLIER_BATCHES (1,64), OUTLIER_GEN (32); ECOCOMPUTE (the binary; default build/ecocompute).
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
pack=$(pwd)/.devpack # bench/device-pack.sh: the shared-library build, carried by the call
if [ -d "$pack" ]; then
    export LD_LIBRARY_PATH="$pack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
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
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(tests calibrate ours torch)
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

# ---- the sweeps of issues #5 and #7 ----
# One part per line: name, models, precisions, kernels, batches, prompt, gen, estimated seconds
# on the H100 (from earlier runs of each part, with margin). Parts split by kernel family
# and model size so that each stays well inside a device command's 600 s; fp16 is in every part
# because each precision is compared with fp16 of its own kernel family, model and batch.
sweep_parts=(
    "int8-fused-small       TinyLlama-1.1B,Qwen2.5-3B  fp16,int8,int8-mixed fused     1,8,64 512 256 170"
    "int8-fused-llama2      Llama-2-7B                 fp16,int8,int8-mixed fused     1,8,64 512 256 290"
    "int8-fused-mistral     Mistral-7B-v0.2            fp16,int8,int8-mixed fused     1,8,64 512 256 230"
    "int8-reference-small   TinyLlama-1.1B,Qwen2.5-3B  fp16,int8,int8-mixed reference 1,8,64 512 256 120"
    "int8-reference-7b      Llama-2-7B,Mistral-7B-v0.2 fp16,int8,int8-mixed reference 1,8,64 512 256 290"
    "packed-fused-small     Qwen2.5-0.5B,TinyLlama-1.1B,Qwen2-1.5B,Qwen2.5-3B fp16,nf4,nf4-dq,fp8 fused 1,8,64 512 128 200"
    "packed-fused-mid       Phi-3-mini-4k,Mistral-7B-v0.2,Llama-3.1-8B fp16,nf4,nf4-dq,fp8 fused 1,8,64 512 128 330"
    "packed-fused-14b       Qwen2.5-14B                fp16,nf4,nf4-dq,fp8  fused     1,8,64 512 128 210"
    "packed-reference-small Qwen2.5-0.5B,TinyLlama-1.1B,Qwen2-1.5B,Qwen2.5-3B fp16,nf4,nf4-dq,fp8 reference 1,8,64 512 128 230"
    "packed-reference-mid   Phi-3-mini-4k,Mistral-7B-v0.2 fp16,nf4,nf4-dq,fp8 reference 1,8,64 512 128 260"
    "packed-reference-8b    Llama-3.1-8B               fp16,nf4,nf4-dq,fp8  reference 1,8,64 512 128 170"
    "packed-reference-14b   Qwen2.5-14B                fp16,nf4,nf4-dq,fp8  reference 1,8,64 512 128 280"
)
# Cheap but honest: one warm-up and one measured run per configuration (SWEEP_RUNS for more),
# no stabilization wait, a short idle baseline per bench session; with one run the CV gates
# cannot apply (disabled). The sampler at 10 ms: a small model's decode window at batch 1 lasts
# ~0.1 s.
protocol=(--runs "${SWEEP_RUNS:-1}" --warmup "${SWEEP_WARMUP:-1}" --stabilize 0
          --idle "${SWEEP_IDLE:-5}" --interval "${SWEEP_INTERVAL:-10}" --cv-tok 100 --cv-power 100 --reruns 0)
budget=${SWEEP_BUDGET_S:-480}
# remaining: seconds of this call's budget left (SECONDS counts from the script's start).
remaining() { echo $((budget - SECONDS)); }

# The bench arguments of part $1 (with the SWEEP_* overrides).
part_args() {
    local name models precs kerns batches plen gen est
    read -r name models precs kerns batches plen gen est <<<"$1"
    printf '%s\n' --model "${SWEEP_MODELS:-$models}" --precision "${SWEEP_PRECISIONS:-$precs}" \
        --kernels "${SWEEP_KERNELS:-$kerns}" --batch "${SWEEP_BATCHES:-$batches}" \
        --prompt-len "${SWEEP_PROMPT_LEN:-$plen}" --gen "${SWEEP_GEN:-$gen}" \
        --device "${SWEEP_DEVICE:-cuda}" --db "$out/results.db" "${protocol[@]}"
}

# Runs every part selected by $1 until the budget is spent. Returns 3 when parts are left.
run_sweep() {
    local sel=$1 line name est matched=0 left=0 rc args done_line
    mkdir -p "$out/sweep"
    for line in "${sweep_parts[@]}"; do
        read -r name _ _ _ _ _ _ est <<<"$line"
        [ "$name" = "$sel" ] || [[ "$name" == "$sel"-* ]] || continue
        matched=1
        # A part started with too little time left would spend it loading a model.
        if [ "$(remaining)" -lt "${SWEEP_MIN_START_S:-120}" ]; then
            echo "sweep part $name: not started, $(remaining) s of the ${budget} s budget left"
            left=1
            continue
        fi
        mapfile -t args < <(part_args "$line")
        echo "== sweep part $name (estimated ${est} s; $(remaining) s of the budget left)"
        echo "ecocompute bench ${args[*]}" | tee -a "$out/sweep/$name.log"
        # SIGINT at the budget: bench finishes and stores the run in flight, prints the
        # summary and exits 1; -k: a run still going 90 s later is killed (it is not stored).
        # stderr (progress, the closing line) to the log and the terminal, the summary to a file.
        rc=0
        ( timeout -s INT -k 90 "$(remaining)" "$bin" bench "${args[@]}" </dev/null 2>&1 \
            >"$out/sweep/$name.summary.txt" ) | tee -a "$out/sweep/$name.log" >&2 || rc=$?
        if [ $rc -eq 0 ]; then
            echo "sweep part $name: complete; $(grep -o '[0-9]* configurations finished ([0-9]* measured before)' "$out/sweep/$name.log" | tail -1)"
        elif [ $rc -eq 124 ] || [ $rc -eq 137 ] ||
            tail -1 "$out/sweep/$name.log" | grep -q 'interrupted:'; then
            done_line=$(grep -o '[0-9]* of [0-9]* configurations finished' "$out/sweep/$name.log" | tail -1 || true)
            echo "sweep part $name: stopped at the budget; ${done_line:-killed in a run (not stored)}"
            left=1
        else
            echo "sweep part $name: bench failed (exit $rc); see $out/sweep/$name.log" >&2
            return 1
        fi
    done
    if [ $matched -eq 0 ]; then
        echo "gpu.sh: no sweep part matches '$sel' (bash bench/gpu.sh plan lists them)" >&2
        return 2
    fi
    if [ $left -eq 1 ]; then
        echo "sweep:$sel: parts left; run 'bash bench/gpu.sh sweep:$sel' again to continue"
        return 3
    fi
}

# ---- accuracy vs float32 and int8-mixed outlier columns ----
eval_groups=("small Qwen2.5-0.5B TinyLlama-1.1B Qwen2-1.5B Qwen2.5-3B Phi-3-mini-4k"
             "7b Llama-2-7B Mistral-7B-v0.2 Llama-3.1-8B" "14b Qwen2.5-14B")
# The precisions of the sweeps a model is in (fp16 as the control).
eval_precisions() {
    case $1 in
    TinyLlama-1.1B | Qwen2.5-3B | Mistral-7B-v0.2) echo fp16,int8,int8-mixed,nf4,nf4-dq,fp8 ;;
    Llama-2-7B) echo fp16,int8,int8-mixed ;;
    Qwen2.5-0.5B | Qwen2-1.5B | Phi-3-mini-4k | Llama-3.1-8B | Qwen2.5-14B) echo fp16,nf4,nf4-dq,fp8 ;;
    *) echo fp16,int8,int8-mixed,nf4,nf4-dq,fp8 ;;
    esac
}

# eval over the models of group $1 (all: every group), skipping models already done. The float32
# reference runs on the CPU: 4 bytes per parameter of host memory (59 GB for Qwen2.5-14B).
run_eval() {
    local sel=$1 g gm models=() m
    for g in "${eval_groups[@]}"; do
        read -r -a gm <<<"$g"
        if [ "$sel" = all ] || [ "${gm[0]}" = "$sel" ]; then models+=("${gm[@]:1}"); fi
    done
    if [ -n "${EVAL_MODELS:-}" ]; then IFS=, read -r -a models <<<"$EVAL_MODELS"; fi
    [ ${#models[@]} -gt 0 ] || { echo "gpu.sh: no eval group '$sel' (small 7b 14b)" >&2; return 2; }
    mkdir -p "$out/eval"
    for m in "${models[@]}"; do
        [ -s "$out/eval/$m.csv" ] && { echo "eval $m: done before"; continue; }
        if [ "$(remaining)" -lt 60 ]; then
            echo "eval $m: not started, budget spent; run the same step again"
            return 3
        fi
        echo "== eval $m"
        # Written under another name first: a file that exists is complete.
        if timeout "$(remaining)" "$bin" eval --model "$m" --device "${SWEEP_DEVICE:-cuda}" \
            --precision "${EVAL_PRECISIONS:-$(eval_precisions "$m")}" \
            --tokens "${EVAL_TOKENS:-24}" --prompt-len "${EVAL_PROMPT_LEN:-8}" --format csv \
            </dev/null >"$out/eval/$m.csv.part"; then
            mv "$out/eval/$m.csv.part" "$out/eval/$m.csv"
            cat "$out/eval/$m.csv"
        else
            echo "eval $m: failed or cut by the budget; run the same step again" >&2
            return 3
        fi
    done
}

# int8-mixed at batch 1 and 64 with --verbose: its stderr has the outlier columns per layer and
# linear input, averaged over the calls (the prefill and --gen - 1 decode steps).
run_outliers() {
    local models batches m b f
    IFS=, read -r -a models <<<"${OUTLIER_MODELS:-TinyLlama-1.1B,Qwen2.5-3B,Llama-2-7B,Mistral-7B-v0.2}"
    IFS=, read -r -a batches <<<"${OUTLIER_BATCHES:-1,64}"
    mkdir -p "$out/outliers"
    for m in "${models[@]}"; do
        for b in "${batches[@]}"; do
            f=$out/outliers/${m}_b$b.txt
            grep -q '^mean over layers' "$f" 2>/dev/null && continue
            if [ "$(remaining)" -lt 60 ]; then
                echo "outliers: budget spent; run the same step again"
                return 3
            fi
            echo "== outliers $m batch $b"
            timeout "$(remaining)" "$bin" run --model "$m" --precision int8-mixed \
                --device "${SWEEP_DEVICE:-cuda}" --batch "$b" \
                --prompt-len "${SWEEP_PROMPT_LEN:-512}" --gen "${OUTLIER_GEN:-32}" --verbose \
                </dev/null >/dev/null 2>"$f" || { cat "$f" >&2; return 3; }
            tail -1 "$f"
        done
    done
    { echo "model,batch,prompt_len,gen,mean_outlier_columns"
      for f in "$out"/outliers/*_b*.txt; do
          [ -e "$f" ] || continue
          m=$(basename "$f" .txt)
          awk -v m="${m%_b*}" -v b="${m##*_b}" -v p="${SWEEP_PROMPT_LEN:-512}" \
              -v g="${OUTLIER_GEN:-32}" '/^mean over layers/ { print m "," b "," p "," g "," $(NF-2) }' "$f"
      done; } >"$out/outliers.csv"
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
for step in "${steps[@]}"; do
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
    quant)
        rm -f "$out/quant.csv"
        for k in fused reference; do
            for b in 1 8 64; do
                for p in fp16 int8 int8-mixed; do
                    "$bin" run --model Llama-2-7B --precision "$p" --kernels "$k" --device cuda \
                        --batch "$b" --prompt-len 512 --gen 256 --energy --idle 3 \
                        --format csv >"$out/run.csv"
                    [ -s "$out/quant.csv" ] || head -1 "$out/run.csv" >"$out/quant.csv"
                    tail -n +2 "$out/run.csv" >>"$out/quant.csv"
                done
            done
        done ;;
    speed)
        # Fused family, one run per MODEL:BATCH:PRECISION of SPEED_RUNS, prompt 512, 128 new
        # tokens, with energy: whole-model figures to compare two builds by.
        rm -f "$out/speed.csv"
        for run in ${SPEED_RUNS:-Llama-2-7B:1:fp16 Llama-2-7B:1:int8 Llama-2-7B:1:int8-mixed \
                Llama-2-7B:1:nf4 Llama-2-7B:1:nf4-dq Llama-2-7B:1:fp8 Llama-2-7B:8:fp16 \
                Llama-2-7B:8:nf4 Llama-2-7B:8:fp8 Llama-2-7B:64:fp16 Llama-2-7B:64:nf4 \
                Llama-2-7B:64:fp8}; do
            IFS=: read -r model batch prec <<<"$run"
            "$bin" run --model "$model" --batch "$batch" --precision "$prec" --kernels fused \
                --device cuda --prompt-len 512 --gen 128 --energy --idle 2 --format csv \
                >"$out/run.csv"
            [ -s "$out/speed.csv" ] || head -1 "$out/run.csv" >"$out/speed.csv"
            tail -n +2 "$out/run.csv" >>"$out/speed.csv"
        done
        "$python" - "$out/speed.csv" <<'PY'
import csv, sys
cols = ("model", "batch", "precision", "decode_tok_per_s", "decode_ms_per_step",
        "prefill_energy_j_gross", "decode_energy_j_gross", "decode_j_per_1k_tok_gross")
print(" | ".join(cols))
for r in csv.DictReader(open(sys.argv[1])):
    print(" | ".join(r[c] for c in cols))
PY
        ;;
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
    sweep:*)
        rc=0
        run_sweep "${step#sweep:}" || rc=$?
        [ $rc -eq 0 ] || exit $rc ;;
    eval | eval:*)
        sel=${step#eval}
        sel=${sel#:}
        rc=0
        run_eval "${sel:-all}" || rc=$?
        [ $rc -eq 0 ] || exit $rc ;;
    outliers)
        rc=0
        run_outliers || rc=$?
        [ $rc -eq 0 ] || exit $rc ;;
    report)
        python3 bench/report_sweep.py "$out" | tee "$out/sweep_report.md" ;;
    plan)
        for line in "${sweep_parts[@]}"; do
            read -r name _ _ _ _ _ _ est <<<"$line"
            mapfile -t args < <(part_args "$line")
            printf '%-24s ~%4s s  ecocompute bench %s\n' "$name" "$est" "${args[*]}"
        done ;;
    *) echo "gpu.sh: unknown step '$step' (tests calibrate ours quant speed trace ncu ncu-sass torch sweep:PART eval[:GROUP] outliers report plan)" >&2; exit 2 ;;
    esac
done
echo
if [ -s "$out/ecocompute.csv" ] || [ -s "$out/quant.csv" ]; then
    python3 bench/report.py "$out" | tee "$out/table.txt"
fi
