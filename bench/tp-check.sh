#!/usr/bin/env bash
# tp-check.sh — tensor parallelism on a machine of 2 or more GPUs (issue 63), in three parts:
# 1. whether the split model generates the tokens of one GPU (`run --tp N` against `--tp 1`,
#    CHECK_MODEL at CHECK_PRECISION);
# 2. `ecocompute bench --tp TPS` over MODELS x PRECISIONS x BATCHES, prompt 512 and 256 new
#    tokens (the one-GPU tables' shape) with a shortened protocol (RUNS (3) measured runs, 1
#    warm-up, no thermal stabilization, a 5 s idle baseline), and one table: tok/s and J/1k
#    tokens (gross) per world size, each GPU's share of the decode energy, the interconnect NVML
#    reports, and the energy and throughput against tp 1 of the same model, precision and batch;
# 3. where the pack has the CUPTI tracer (bench/kernel_trace.c), the communication's share of a
#    decode step: each model at the first precision, each batch and each world size above 1,
#    traced (prompt 512, 32 new tokens), with bench/trace_report.py's report per GPU: the step's
#    wall time and its NCCL kernels' time.
# STEPS (default tokens,bench,trace) picks the parts. TPS defaults to 1,2,4 cut to the GPUs
# present. Results go to $OUT (or bench-out/). A CPU check
# of the pipeline: DEVICE=cpu MODELS=tiny CHECK_MODEL=tiny CHECK_PRECISION=f32 PRECISIONS=f32
# with the fake NVML (tests/meter/fake_nvml.c).
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
timeout -s INT -k 20 "${BENCH_S:-420}" "$bin" bench --model "$MODELS" --precision "$PRECISIONS" \
  --batch "$BATCHES" --tp "$TPS" --device "$device" --prompt-len 512 --gen 256 \
  --runs "${RUNS:-3}" --warmup 1 \
  --stabilize 0 --idle 5 --reruns 0 --db "$db" --format csv >"$out/tp-summary.csv" ||
  echo "tp-check: bench exited $? (BENCH_S ${BENCH_S:-420} s): the table holds what finished" >&2
cp "$db" "$out/tp.db"
"$bin" export --db "$db" -o "$out/tp-runs.csv"
{
python3 - "$out/tp-runs.csv" <<'PY'
import csv, statistics as st, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
by = collections.defaultdict(list)
for r in rows:
    by[(r["model"], r["precision"], int(r["batch"]), int(r["tp"]))].append(r)
f = lambda r, k: float(r[k]) if r[k] not in ("", None) else float("nan")
mean = lambda rs, k: st.mean(f(r, k) for r in rs)
print(f"{'model':<12} {'prec':<5} {'batch':>5} {'tp':>2} {'n':>2} {'tok/s':>9} {'J/1k':>8} "
      f"{'dJ%':>6} {'dtok%':>6} {'interconnect':<16} decode J per GPU")
for (m, p, b, t), rs in sorted(by.items()):
    base = by.get((m, p, b, 1))
    dj = dt = float("nan")
    if base:
        dj = 100 * (mean(rs, "j_per_1k_gross") / mean(base, "j_per_1k_gross") - 1)
        dt = 100 * (mean(rs, "tok_s") / mean(base, "tok_s") - 1)
    per = [st.mean(float(r["decode_gpu_energy_per_gpu_j"].split(";")[g]) for r in rs)
           for g in range(len(rs[0]["decode_gpu_energy_per_gpu_j"].split(";")))
           ] if rs[0]["decode_gpu_energy_per_gpu_j"] else []
    print(f"{m:<12} {p:<5} {b:>5} {t:>2} {len(rs):>2} {mean(rs, 'tok_s'):>9.1f} "
          f"{mean(rs, 'j_per_1k_gross'):>8.1f} {dj:>+6.1f} {dt:>+6.1f} {rs[0]['interconnect']:<16} "
          + " ".join(f"{e:.1f}" for e in per))
PY
} | tee "$out/tp-table.txt"
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
