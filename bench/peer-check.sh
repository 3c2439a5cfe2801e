#!/usr/bin/env bash
# peer-check.sh [peer|formats] — issue 62's measurements, each mode one device call on the GPU
# machine (carry .devpack, bench/device-pack.sh), every figure from ecocompute's own meter.
#
#   peer     (default) ecocompute's fused fp16 decode against the CUDA-graph PyTorch peer
#            (bench/torch_graph_peer.py) in the same call: `ecocompute bench` (MODEL, default
#            Llama-2-7B synthetic; prompt 512, 256 new tokens; BATCHES 1,8,64; the default
#            protocol with RUNS=3 runs and no re-runs), then the peer under `ecocompute meter`
#            at the same shapes (PEER_RUNS=3 windows of >= 5 s a batch size, the same
#            stabilization wait). Prints, per batch: ours and the peer's decode tok/s and J/1k
#            tokens (gross, net) and ours / peer; each side's n and the peer's self-checks.
#            Into $OUT: peer-check.csv and .txt, the bench database and export, the peer's
#            meter JSON, summary and log. Estimated on the H200 (docs/results.md's run lengths:
#            a bench run is two windows of >= 5 s, ~11-12 s): bench ~215 s (load and idle
#            ~30 s; per batch 3 warm-ups, 3 runs, 30 s waits before batches 8 and 64), peer
#            ~200 s (torch and weights ~20 s, 10 s idle; per batch prefill, 4 graphs and the
#            self-check ~5 s, 4 untimed phases, 3 windows, the same waits): ~415 s.
#   formats  every FORMATS (default fp16,int8,int8-mixed,nf4,nf4-dq,fp8) x BATCHES, fused,
#            `ecocompute bench` with RUNS=1 measured run (1 warm-up, no stabilization, 5 s
#            idle, no re-runs) after `ecocompute calibrate` (read bandwidth; READ_GBS=4535
#            skips it). Prints per configuration decode tok/s, % of the read-bandwidth roofline
#            as `run --energy` counts it, J/1k (gross, net), Δ vs fp16 of the same batch, and
#            which issue 62 targets pass: batch 1 >= 80 % roofline; batch 2-16 >= 70 %; batch
#            32-64 every quantized format's J/1k gross and net <= fp16's. Into $OUT:
#            formats.csv and .txt, the database, its export and the calibration. Estimated:
#            calibrate ~20 s, load and quantize six backends <= 60 s, 18 configurations of
#            ~15 s (one warm-up generation, one run of two >= 5 s windows): ~355 s. RUNS=2
#            takes ~26 s a configuration: split it with FORMATS or BATCHES.
#
# Both modes stop bench at BUDGET_S (default 520 s after the start; the peer mode keeps
# PEER_RESERVE_S=200 of it for the peer; SIGINT: the run in flight finishes and is stored) and
# print what was measured. Overrides: MODEL, BATCHES, PROMPT_LEN, GEN, RUNS, PEER_RUNS,
# STABILIZE (s, peer mode, both sides), IDLE (s, both sides; formats: 5), MIN_WINDOW (bench's
# --min-window, auto; the peer's windows last as long, auto = 5 s), PEER_ARGS (more arguments
# for the peer, e.g. "--bucket 0": attend to the whole cache every step, exactly as gpt-fast),
# DEVICE (cuda), ECOCOMPUTE (the binary), PYTHON (the one with torch), PEER (the peer script;
# tests use a stand-in).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-peer}
case $mode in peer | formats) ;; *)
    echo "peer-check.sh: unknown mode '$mode' (peer or formats)" >&2
    exit 2 ;;
esac
out=${OUT:-bench-out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
source bench/pack-env.sh # .devpack's libraries on LD_LIBRARY_PATH, NCCL
bin=${ECOCOMPUTE:-$pack/bin/ecocompute}
python=${PYTHON:-python3}
[ -x /opt/torch/.venv/bin/python ] && python=${PYTHON:-/opt/torch/.venv/bin/python}
model=${MODEL:-Llama-2-7B}
batches=${BATCHES:-1,8,64}
plen=${PROMPT_LEN:-512}
gen=${GEN:-256}
device=${DEVICE:-cuda}
window=${MIN_WINDOW:-auto} # bench's --min-window; the peer's windows last the same (auto: 5 s)
peer_window=$window
[ "$peer_window" = auto ] && peer_window=5
budget=${BUDGET_S:-520}
export XDG_DATA_HOME=$out/xdg # calibrate's saved file stays with this call's results
remaining() { echo $((budget - SECONDS)); }

if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader |
        tee "$out/gpu.txt"
fi
if [ -f "$pack/commit.txt" ] && [ "$bin" = "$pack/bin/ecocompute" ]; then
    tee "$out/commit.txt" <"$pack/commit.txt"
fi

# bench_until SECONDS DB ARGS...: `ecocompute bench` stopped by SIGINT after SECONDS (the run in
# flight is stored); progress to $out/bench.log and stderr. A stop at the budget is not an error:
# the report shows what was measured.
bench_until() {
    local secs=$1 db=$2 rc=0
    shift 2
    [ "$secs" -gt 0 ] || secs=1 # timeout 0 would mean no limit
    echo "ecocompute bench $* --db $db" | tee -a "$out/bench.log" >&2
    ( timeout -s INT -k 90 "$secs" "$bin" bench "$@" --db "$db" --format csv </dev/null 2>&1 \
        >"$db.summary.csv" ) | tee -a "$out/bench.log" >&2 || rc=$?
    if [ $rc -ne 0 ]; then
        echo "peer-check.sh: bench exited $rc (stopped at the budget or failed; see bench.log)" >&2
    fi
    "$bin" export --db "$db" -o "${db%.db}-runs.csv"
}

case $mode in
peer)
    runs=${RUNS:-3}
    stabilize=${STABILIZE:-30}
    idle=${IDLE:-10}
    peer_reserve=${PEER_RESERVE_S:-200} # the peer's estimated share of the budget, kept for it
    read -r -a peer_args <<<"${PEER_ARGS:-}" # words: "--bucket 0"
    rm -f "$out/peer-check.db"* "$out/peer.json" "$out/peer-meter.json"
    bench_until "$(($(remaining) - peer_reserve))" "$out/peer-check.db" --model "$model" \
        --precision fp16 --kernels fused --batch "$batches" --prompt-len "$plen" --gen "$gen" \
        --device "$device" --runs "$runs" --reruns 0 --stabilize "$stabilize" \
        --min-window "$window" --idle "$idle"
    if "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
        2>/dev/null || [ -n "${PEER:-}" ]; then
        echo "== the PyTorch peer ($(remaining) s of the budget left)" >&2
        # SIGTERM at the budget reaches the peer through the meter, which still prints its JSON;
        # the peer's summary is written after every batch size.
        left=$(($(remaining) - 15))
        [ "$left" -gt 0 ] || left=1
        timeout -s TERM -k 30 "$left" "$bin" meter --format json -- \
            "$python" "${PEER:-bench/torch_graph_peer.py}" --model "$model" --batch "$batches" \
            --prompt-len "$plen" --gen "$gen" --runs "${PEER_RUNS:-3}" --stabilize "$stabilize" \
            --min-window "$peer_window" --idle "$idle" --summary "$out/peer.json" \
            "${peer_args[@]}" >"$out/peer-meter.json" 2>"$out/peer.log" ||
            echo "peer-check.sh: the peer exited $? (see peer.log)" >&2
        tail -n 20 "$out/peer.log" >&2
    else
        echo "peer-check.sh: no torch with CUDA in $python; the peer is not measured" >&2
    fi
    echo
    if [ -s "$out/peer.json" ] && [ -s "$out/peer-meter.json" ]; then
        python3 bench/peer_report.py peer "$out/peer-check-runs.csv" "$out/peer-meter.json" \
            "$out/peer.json" --csv "$out/peer-check.csv" | tee "$out/peer-check.txt"
    else
        "$bin" export --db "$out/peer-check.db" --summary --format table
    fi
    ;;
formats)
    runs=${RUNS:-1}
    if [ -n "${READ_GBS:-}" ]; then
        read_bw=$(awk -v g="$READ_GBS" 'BEGIN { printf "%.0f", g * 1e9 }')
    else
        "$bin" calibrate --device "$device" --idle 2 --seconds 4 --no-db \
            --output "$out/calibration.json" --format json >/dev/null
        read_bw=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["read"]["bytes_per_s"])' "$out/calibration.json")
    fi
    echo "read bandwidth: $read_bw bytes/s" >&2
    rm -f "$out/formats.db"*
    bench_until "$(($(remaining) - 20))" "$out/formats.db" --model "$model" \
        --precision "${FORMATS:-fp16,int8,int8-mixed,nf4,nf4-dq,fp8}" --kernels fused \
        --batch "$batches" --prompt-len "$plen" --gen "$gen" --device "$device" --runs "$runs" \
        --warmup 1 --stabilize 0 --idle "${IDLE:-5}" --reruns 0 --min-window "$window"
    "$bin" models --format csv >"$out/models.csv"
    echo
    python3 bench/peer_report.py formats "$out/formats-runs.csv" "$out/models.csv" "$read_bw" \
        --csv "$out/formats.csv" | tee "$out/formats.txt"
    ;;
esac
