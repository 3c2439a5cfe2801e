#!/usr/bin/env bash
# test.sh — the test command: builds ecocompute twice (normal, and with AddressSanitizer +
# UndefinedBehaviorSanitizer) and runs the whole CTest suite on each, then runs every fuzz target
# for 20 s (scripts/fuzz.sh; when clang is present). Fails if any test or fuzz target fails.
# GPU tests report "skipped" on machines without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build
ctest --test-dir build --output-on-failure -j "$(nproc)"
bash scripts/build.sh build-asan -DECOCOMPUTE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)"
# The parsers of untrusted files under libFuzzer, 20 s each (own build folder, build-fuzz).
bash scripts/fuzz.sh 20
