#!/usr/bin/env bash
# setup.sh [PREFIX] — a newcomer's first run on a fresh Debian machine: installs the build packages,
# builds only the program (Release, no tests; the CUDA backend when nvcc is found and
# ECOCOMPUTE_CUDA is not OFF), installs it under PREFIX (default ~/.local), then
# does its main job once: without a GPU, generates text on the CPU with the bundled tiny model under
# the meter (tok/s, CPU energy or why it is unreadable); with a GPU, lists the GPUs and measures a
# short fp16 vs nf4 comparison of a small model.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-$HOME/.local}
start=$(date +%s)
bash scripts/install-deps.sh
# nvcc is often installed outside PATH; the CUDA backend is built when it is found, unless
# ECOCOMPUTE_CUDA=OFF (a machine with the toolkit but no GPU: minutes less to build).
cuda=${ECOCOMPUTE_CUDA:-ON}
if [ "$cuda" != OFF ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
cmake -S . -B build-setup -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DECOCOMPUTE_CUDA="$cuda" \
      -DCMAKE_INSTALL_PREFIX="$prefix" >/dev/null
cmake --build build-setup -j "$(nproc)" --target ecocompute_cli
cmake --install build-setup >/dev/null
bin=$prefix/bin/ecocompute
echo "== installed $bin (set-up took $(( $(date +%s) - start )) s)" >&2
case ":$PATH:" in *":$prefix/bin:"*) ;; *) echo "   add it to PATH: export PATH=\"$prefix/bin:\$PATH\"" >&2 ;; esac

if "$bin" gpus >/dev/null 2>&1; then
  echo "== ecocompute gpus" >&2
  "$bin" gpus
  for p in fp16 nf4; do
    echo "== ecocompute run --model small --precision $p --device cuda --gen 128 --energy --idle 2" >&2
    "$bin" run --model small --precision "$p" --device cuda --gen 128 --energy --idle 2
  done
else
  echo "== no GPU here: the bundled 260K-parameter model writes a story on the CPU, under the meter" >&2
  "$bin" meter -- "$bin" run --model tests/data/models/stories260K.bin \
      --tokenizer tests/data/models/tok512.bin --precision f32 --gen 256 --prompt "Once upon a time"
fi
cat >&2 <<'NEXT'
== next steps
  ecocompute --help                       every command; 'ecocompute CMD --help' has examples
  ecocompute meter --idle 10 -- CMD       energy of any command (gross and net J, W)
  ecocompute advise optimize --model Mistral-7B --gpu A800   the greenest configuration
  man ecocompute-meter                    (MANPATH: $prefix/share/man)
NEXT
