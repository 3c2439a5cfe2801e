#!/usr/bin/env bash
# test.sh — the test command: builds ecocompute twice and runs the whole CTest suite on each:
#   build/       gcc, Release, warnings as errors, with the CUDA backend where nvcc is found;
#   build-asan/  clang, AddressSanitizer + UndefinedBehaviorSanitizer (float-cast-overflow too),
#                warnings as errors, host code only;
# then runs every fuzz target for 20 s (scripts/fuzz.sh: build-fuzz/, clang with libFuzzer).
# GPU tests report "skipped" on machines without a GPU. Fails if any build, test or fuzz target
# fails. Each stage's wall time is printed as it ends ("test.sh: ... took N s"): the CUDA build
# for every architecture is most of the run on a 2-core machine (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
stage() { # stage NAME COMMAND...: runs the command and says how long it took
    local name=$1 start=$SECONDS
    shift
    "$@"
    echo "test.sh: $name took $((SECONDS - start)) s"
}
stage "install-deps" bash scripts/install-deps.sh
stage "gcc Release build (CUDA: every architecture where nvcc is found)" \
  env CC=gcc bash scripts/build.sh build -DCMAKE_BUILD_TYPE=Release -DECOCOMPUTE_WERROR=ON
stage "tests of the Release build" ctest --test-dir build --output-on-failure -j "$(nproc)"
stage "clang ASan/UBSan build" env CC=clang CXX=clang++ bash scripts/build.sh build-asan \
  -DECOCOMPUTE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DECOCOMPUTE_WERROR=ON
stage "tests under ASan/UBSan" env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir build-asan --output-on-failure -j "$(nproc)"
# The parsers of untrusted files under libFuzzer, 20 s each (own build folder, build-fuzz).
stage "fuzzing" bash scripts/fuzz.sh 20
