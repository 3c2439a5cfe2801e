#!/usr/bin/env bash
# device-prep.sh — run HERE (the development machine) before sending work to a GPU machine that has
# no network and no -dev packages: builds ecocompute with CUDA into build/, and gathers what the
# GPU machine lacks into a git-ignored folder that the device call carries:
#   .devlibs/   runtime shared libraries of our Debian dependencies (cJSON, cmocka)
# The real test data the tests read (tests/data) travels with the working tree.
# The GPU machine then runs bench/on-device.sh, which recreates this machine's paths.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build
rm -rf .devlibs
mkdir -p .devlibs
for lib in libcjson.so.1 libcmocka.so.0; do
  cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')" .devlibs/
done
du -sh build .devlibs >&2
