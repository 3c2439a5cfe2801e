#!/usr/bin/env bash
# tp-check.sh — tensor parallelism on a machine of 2 or more GPUs (issue 63), in three parts:
# 1. whether the split model generates the tokens of one GPU (`run --tp N` against `--tp 1`,
#    CHECK_MODEL at CHECK_PRECISION);
# 2. `ecocompute bench --tp TPS` over MODELS x PRECISIONS x BATCHES, prompt 512 and 256 new
#    tokens (the one-GPU tables' shape) with a shortened protocol (RUNS (3) measured runs, 1
#    warm-up, no thermal stabilization, a 5 s idle baseline), and bench/tp_report.py's table:
#    tok/s and J/1k tokens (gross, net, 95 % CI) per world size, each GPU's decode energy, and
#    the energy and throughput against tp 1 of the same model, precision and batch;
# 3. where the pack has the CUPTI tracer (bench/kernel_trace.c), the communication's share of a
#    decode step: each model at the first precision, each batch and each world size above 1,
#    traced (prompt 512, 32 new tokens), with bench/trace_report.py's report per GPU: the step's
#    wall time and its NCCL kernels' time.
# STEPS (default tokens,bench,trace) picks the parts. TPS defaults to 1,2,4 cut to the GPUs
# present. Results go to $OUT (or bench-out/). A CPU check of the pipeline: DEVICE=cpu
# MODELS=tiny CHECK_MODEL=tiny CHECK_PRECISION=f32 PRECISIONS=f32 with the fake NVML
# (tests/meter/fake_nvml.c).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench-out}
mkdir -p "$out"
source bench/pack-env.sh # .devpack's libraries on LD_LIBRARY_PATH, NCCL
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off on the lent machines
bin=${ECOCOMPUTE:-$pack/bin/ecocompute}
device=${DEVICE:-cuda}
MODELS=${MODELS:-Llama-2-7B} PRECISIONS=${PRECISIONS:-fp16} BATCHES=${BATCHES:-1,8,64}
if [ "$device" = cpu ]; then ngpu=${NGPU:-2}; else ngpu=$(nvidia-smi -L | wc -l); fi
if [ -z "${TPS:-}" ]; then
    TPS=1
    for n in 2 4 8; do [ "$n" -le "$ngpu" ] && TPS=$TPS,$n; done
fi
[ "$TPS" != 1 ] || { echo "tp-check: needs 2 or more GPUs (found $ngpu)" >&2; exit 1; }
steps=,${STEPS:-tokens,bench,trace},

# 1. the split model's tokens against one device's (greedy, synthetic prompts), per world size
cm=${CHECK_MODEL:-small} cp=${CHECK_PRECISION:-fp16}
ids() {
    local json
    json=$("$bin" run --model "$cm" --precision "$cp" --device "$device" --tp "$1" --batch 4 \
             --prompt-len 32 --gen 64 --format json) || return 1
    python3 -c "import json,sys; print(json.load(sys.stdin)[0]['first_token_ids'])" <<<"$json"
}
[[ $steps != *,tokens,* ]] || one=$(ids 1)
[[ $steps != *,tokens,* ]] || : >"$out/tp-tokens.txt"
for t in ${TPS//,/ }; do
    [[ $steps == *,tokens,* ]] || break
    [ "$t" -gt 1 ] || continue
    if split=$(ids "$t" 2>"$out/tp-tokens.err"); then
        same=no; [ "$one" = "$split" ] && same=yes
        echo "$cm $cp tp $t vs tp 1, first 16 ids of sequence 0 equal: $same ($split | $one)"
    else
        echo "$cm $cp tp $t: $(cat "$out/tp-tokens.err")"
    fi | tee -a "$out/tp-tokens.txt"
done

# 2. the sweep
# BENCH_S (default 420) bounds it: bench stops at the interrupt and keeps every finished
# configuration in TP_DB (default /tmp/ec-tp.db, copied to $OUT), where the same command on a
# warm machine resumes the rest.
db=${TP_DB:-/tmp/ec-tp.db}
if [[ $steps == *,bench,* ]]; then
    timeout -s INT -k 20 "${BENCH_S:-420}" "$bin" bench --model "$MODELS" \
        --precision "$PRECISIONS" --batch "$BATCHES" --tp "$TPS" --device "$device" \
        --prompt-len 512 --gen 256 --runs "${RUNS:-3}" --warmup 1 --stabilize 0 --idle 5 \
        --reruns 0 --db "$db" --format csv >"$out/tp-summary.csv" ||
        echo "tp-check: bench exited $? (BENCH_S ${BENCH_S:-420} s): the table holds what finished" >&2
    cp "$db" "$out/tp.db"
    "$bin" export --db "$db" -o "$out/tp-runs.csv"
    python3 bench/tp_report.py "$out/tp-runs.csv" | tee "$out/tp-table.txt"
fi

# 3. where a step's time goes with the model split: the all-reduces' share, per GPU
tracer=$pack/lib/libkernel_trace.so
if [[ $steps == *,trace,* ]] && [ -f "$tracer" ] && [ "$device" != cpu ]; then
    mkdir -p "$out/trace"
    for m in ${MODELS//,/ }; do
        layers=$("$bin" models --format csv | awk -F, -v m="$m" '
            NR == 1 {for (i = 1; i <= NF; i++) if ($i == "layers") c = i}
            $1 == m {print $c}')
        p=${PRECISIONS%%,*}
        for b in ${BATCHES//,/ }; do
            for t in ${TPS//,/ }; do
                [ "$t" -gt 1 ] || continue
                csv=$out/trace/$m-b$b-$p-tp$t.csv
                CUDA_INJECTION64_PATH=$tracer KERNEL_TRACE_OUT=$csv "$bin" run --model "$m" \
                    --precision "$p" --device "$device" --tp "$t" --batch "$b" --prompt-len 512 \
                    --gen 32 --format csv >/dev/null
                echo "== $m $p batch $b tp $t"
                python3 bench/trace_report.py "$csv" "$layers" | grep -E '^(== GPU|decode steps|all-reduce)'
            done
        done
    done | tee "$out/tp-trace.txt"
fi
