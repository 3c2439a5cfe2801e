#!/usr/bin/env bash
# ab-speed.sh LIB_A LIB_B [...] — same-machine A/B of ecocompute library builds (GPU machine).
# Each argument is a directory holding a libecocompute.so, an .so.xz file, or a build's own pack:
# a directory or .tar.xz holding bin/ecocompute and lib/libecocompute.so (files are unpacked to a
# temporary directory). A pack runs its own CLI, so builds whose library API differs compare too;
# a bare library runs under the CLI of .devpack/. Each build runs once per SPEED_RUNS entry
# (MODEL:BATCH:PRECISION, default Llama-2-7B at batch 1 in fp16, int8, int8-mixed, nf4, fp8), the
# builds alternating within each entry, with `run`'s usual speed-and-energy arguments (prompt
# 512, fused kernels, --energy). ROUNDS (default 1) repeats the whole set. Prints one line per run:
# build, model, batch, precision, ms/step, tok/s, decode J/1k gross, prefill s, prefill J gross.
# GEN (default 128) sets the new tokens per run. Over 128 tokens a decode window lasts 0.1-1 s,
# under the ~5 s below which the counter's 100 ms updates show (docs/measurement.md): runs of
# equal speed read energies up to 25 % apart. To compare
# energy, set GEN so that decode lasts at least 5 s.
# Machines of one kind differ by up to 5 %, so compare builds only within
# one call of this script.
# A baseline: run bench/device-pack.sh in a worktree of the other commit and pack its
# bin/ecocompute and lib/libecocompute.so with `tar -cJf` into .abpack/ (git-ignored, ~13 MB);
# carry .abpack next to .devpack (64 MiB in all).
# An argument VAR=VALUE@LIB runs LIB with that environment variable set.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/pack-env.sh # .devpack's libraries and the Debian ones it packs
[ -x "$pack/bin/ecocompute" ] || { echo "ab-speed.sh: no .devpack/bin/ecocompute (bench/device-pack.sh)" >&2; exit 2; }
[ $# -ge 2 ] || { echo "usage: ab-speed.sh LIB_A LIB_B [...]" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dirs=() clis=() labels=() envs=()
for i in $(seq 1 $#); do
    arg=${!i} env=
    if [[ $arg =~ ^([A-Za-z_][A-Za-z0-9_]*=[^@]*)@(.+)$ ]]; then
        env=${BASH_REMATCH[1]} arg=${BASH_REMATCH[2]}
    fi
    envs+=("$env")
    labels+=("${env:+$env@}$(basename "$arg")")
    dir=$arg
    if [ -f "$arg" ]; then
        dir=$tmp/$i
        mkdir -p "$dir"
        case "$arg" in
        *.tar.xz) tar -xJf "$arg" -C "$dir" ;;
        *) xz -dc "$arg" >"$dir/libecocompute.so" ;;
        esac
    fi
    dir=$(cd "$dir" && pwd)
    if [ -x "$dir/bin/ecocompute" ]; then
        clis+=("$dir/bin/ecocompute") dirs+=("$dir/lib")
    else
        clis+=("$pack/bin/ecocompute") dirs+=("$dir")
    fi
done
export XDG_DATA_HOME=$tmp/xdg
echo "build | model | batch | precision | ms/step | tok/s | decode J/1k gross | prefill s |" \
    "prefill J gross"
for round in $(seq 1 "${ROUNDS:-1}"); do
    for run in ${SPEED_RUNS:-Llama-2-7B:1:fp16 Llama-2-7B:1:int8 Llama-2-7B:1:int8-mixed \
            Llama-2-7B:1:nf4 Llama-2-7B:1:fp8}; do
        IFS=: read -r model batch prec <<<"$run"
        for i in "${!dirs[@]}"; do
            env ${envs[$i]} LD_LIBRARY_PATH="${dirs[$i]}:$LD_LIBRARY_PATH" "${clis[$i]}" run \
                --model "$model" --batch "$batch" --precision "$prec" --kernels fused --device cuda \
                --prompt-len 512 --gen "${GEN:-128}" --energy --idle 2 --format csv \
                >"$tmp/run.csv" 2>"$tmp/run.err" || {
                echo "${labels[$i]} | $model | $batch | $prec | failed: $(tail -1 "$tmp/run.err")"
                continue
            }
            python3 - "$tmp/run.csv" "${labels[$i]}" <<'PY'
import csv, sys
r = next(csv.DictReader(open(sys.argv[1])))
print(" | ".join([sys.argv[2], r["model"], r["batch"], r["precision"], r["decode_ms_per_step"],
                  r["decode_tok_per_s"], r["decode_j_per_1k_tok_gross"], r["prefill_s"],
                  r["prefill_energy_j_gross"]]))
PY
        done
    done
done
