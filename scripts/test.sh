#!/usr/bin/env bash
# test.sh — the test command: builds ecocompute twice and runs the whole CTest suite on each:
#   build/       gcc, Release, warnings as errors, with the CUDA backend where nvcc is found;
#   build-asan/  clang, AddressSanitizer + UndefinedBehaviorSanitizer (float-cast-overflow too),
#                warnings as errors, host code only;
# then runs every fuzz target for 20 s (scripts/fuzz.sh: build-fuzz/, clang with libFuzzer).
# GPU tests report "skipped" on machines without a GPU. Fails if any build, test or fuzz target
# fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
CC=gcc bash scripts/build.sh build -DCMAKE_BUILD_TYPE=Release -DECOCOMPUTE_WERROR=ON
ctest --test-dir build --output-on-failure -j "$(nproc)"
CC=clang CXX=clang++ bash scripts/build.sh build-asan -DECOCOMPUTE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
  -DECOCOMPUTE_WERROR=ON
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)"
# The parsers of untrusted files under libFuzzer, 20 s each (own build folder, build-fuzz).
bash scripts/fuzz.sh 20
