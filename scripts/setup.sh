#!/usr/bin/env bash
# setup.sh — everything on a fresh Debian machine: installs build packages, builds ecocompute,
# then does its main job once: lists the GPUs and meters an example command.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build
echo "== ecocompute gpus" >&2
./build/ecocompute gpus || true   # no driver is not an error of the set-up
echo "== ecocompute meter -- sleep 2" >&2
./build/ecocompute meter -- sleep 2
