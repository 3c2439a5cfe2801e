#!/usr/bin/env bash
# arch-check.sh ARCHS — run on the GPU machine (carry `.devdeps`, made here by
# bench/device-deps.sh): builds ecocompute for the CUDA architectures ARCHS (a
# CMAKE_CUDA_ARCHITECTURES value such as 80-virtual, 75-virtual or "89-virtual;90a-real", or
# `default` for CMakeLists.txt's list) in its own folder build-arch-<ARCHS>, runs the GPU tests
# (`ctest -L gpu`: every kernel against its CPU reference) and a short bench (Llama-2-7B,
# synthetic weights, every CUDA precision x both kernel families x batch 1 and 64, prompt 32,
# 16 new tokens, one run each), and prints one line per configuration with tok/s and the code
# that ran.
#
# A PTX-only build stands in for an older GPU: the driver compiles compute_80 PTX for the H200
# and every kernel then has __CUDA_ARCH__ 800, the device code an A100 runs, and the backend
# takes the paths of that code (src/engine/cuda/code_arch.cu); test_cuda_kernels checks that
# the code the driver loaded is the one `ecocompute gpus` predicts. bf16 is refused below
# compute_80 (the bench prints its one-line refusal).
#
# Time (H200 machine, 16 cores): the build takes the longest kernel file's compile; nvcc
# compiles a file's architectures in parallel (--threads 0). The driver's first use of PTX
# compiles it, once: cached in /tmp/ec-ptx-cache for the later steps. Measured for compute_75
# and compute_89 (two builds at once): build 142-207 s; GPU tests 170 s to over 190 s with the
# driver compiling the PTX, 96 s once it is cached. Each step has its own time limit so that one
# call for one ARCHS fits the device's 10 minutes: BUILD_S (290), TESTS_S (200, TESTS=0 skips
# the tests and builds only the CLI), BENCH_S (100, BENCH=0 skips the bench; its 24-28
# configurations each load the model: PRECISIONS picks some); on a warm machine the same
# command again continues (the build and the PTX cache stay). Two ARCHS at once (OUT apart)
# share the GPU: their tests pass as alone, their bench speeds are not figures; on a machine of
# several GPUs, CUDA_VISIBLE_DEVICES gives each its own. Builds running beside a bench slow the
# driver's PTX compilation (the CPUs are theirs): build every ARCHS first (BENCH=0), then bench.
# Results in $OUT: arch-<ARCHS>.txt (the table), build.log, tests.log, bench.csv, bench.log.
set -uo pipefail
cd "$(dirname "$0")/.."
archs=${1:?usage: bench/arch-check.sh ARCHS   (e.g. 80-virtual, 75-virtual, 89-virtual, default)}
name=$(printf '%s' "$archs" | tr -c 'A-Za-z0-9_-' '_')
out=${OUT:-bench-out}
mkdir -p "$out"
build=build-arch-$name
deps=/tmp/ec-deps
lib=$deps/usr/lib/x86_64-linux-gnu
if [ ! -d "$deps" ]; then
    [ -f .devdeps/deps.tar.xz ] || { echo "arch-check: .devdeps/deps.tar.xz missing (bash bench/device-deps.sh here, then carry .devdeps)" >&2; exit 1; }
    # Unpacked aside and renamed into place: several ARCHS may start at once.
    mkdir -p "$deps.$$" && tar -xJf .devdeps/deps.tar.xz -C "$deps.$$"
    mv -T "$deps.$$" "$deps" 2>/dev/null || rm -rf "$deps.$$"
fi
# pkgconf from the pack, on its own library, answering with the pack's paths.
printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$lib" "$deps/usr/bin/pkgconf" >"$deps/pkg-config.$$"
chmod +x "$deps/pkg-config.$$" && mv -f "$deps/pkg-config.$$" "$deps/pkg-config"
export PKG_CONFIG_LIBDIR=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$deps
export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
export CUDA_CACHE_PATH=/tmp/ec-ptx-cache CUDA_CACHE_MAXSIZE=4294967296
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
arch_opt=()
[ "$archs" = default ] || arch_opt=("-DCMAKE_CUDA_ARCHITECTURES=$archs")

t0=$(date +%s)
cmake -S . -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "${arch_opt[@]}" \
    -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_FLAGS=--threads=0 \
    -DPKG_CONFIG_EXECUTABLE="$deps/pkg-config" -DCMAKE_PREFIX_PATH="$deps/usr" \
    -DSQLite3_INCLUDE_DIR="$deps/usr/include" -DSQLite3_LIBRARY="$lib/libsqlite3.so" \
    -DZLIB_INCLUDE_DIR="$deps/usr/include" -DZLIB_LIBRARY="$lib/libz.so.1" \
    >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
# Every target of `ctest -L gpu` (a test whose binary is missing counts as failed).
targets=(ecocompute_cli test_cuda_kernels test_cuda_int8 test_cuda_nf4_fp8 test_cuda_model test_cuda_tp)
[ "${TESTS:-1}" != 0 ] || targets=(ecocompute_cli)
timeout "${BUILD_S:-290}" cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >"$out/build.log" 2>&1
rc=$?
build_s=$(($(date +%s) - t0))
if [ $rc -ne 0 ]; then
    grep -E "error|Error" "$out/build.log" | head -20
    echo "arch-check $archs: build failed or passed its ${BUILD_S:-290} s (exit $rc) after ${build_s} s;" \
        "on a warm machine the same command continues the build"
    exit 1
fi
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bin=$build/ecocompute
cuobjdump --list-elf "$bin" 2>/dev/null | grep -o 'sm_[0-9a-z]*' | sort -u | tr '\n' ' ' >"$out/elf.txt"
cuobjdump --list-ptx "$bin" 2>/dev/null | grep -o 'sm_[0-9a-z]*' | sort -u | tr '\n' ' ' >"$out/ptx.txt"

t1=$(date +%s)
if [ "${TESTS:-1}" = 0 ]; then
    echo "tests skipped (TESTS=0)" >"$out/tests.log"
    tests_rc=0
else
    timeout "${TESTS_S:-200}" ctest --test-dir "$build" -L gpu -j 4 --output-on-failure \
        >"$out/tests.log" 2>&1
    tests_rc=$?
fi
tests_s=$(($(date +%s) - t1))
# ctest shows a passing test's output only in its log.
code=$(grep -o 'runs [a-z]*_[0-9]* code, predicted [0-9]*' "$build/Testing/Temporary/LastTest.log" \
    2>/dev/null | head -1)

# The precisions this build runs on GPU 0, as `ecocompute gpus` predicts them; a precision left
# out (bf16 below compute_80) shows its refusal instead. PRECISIONS (a comma list) benches only
# those of them, e.g. the ones an earlier call's time limit cut off.
precisions=$("$bin" gpus --format json 2>/dev/null |
    python3 -c 'import json, sys; print(",".join(json.load(sys.stdin)[0]["precisions"].split()))')
refusal=""
case ",$precisions," in
*,bf16,*) ;;
*) refusal=$("$bin" run --model tiny --precision bf16 --device cuda --gen 2 2>&1 >/dev/null | tail -1) ;;
esac
if [ -n "${PRECISIONS:-}" ]; then
    precisions=$(python3 -c 'import sys; have = sys.argv[1].split(","); print(",".join(
        p for p in sys.argv[2].split(",") if p in have))' "$precisions" "$PRECISIONS")
    [ -n "$precisions" ] || { echo "arch-check: PRECISIONS '$PRECISIONS': none of them runs in this build" >&2; exit 2; }
fi

t2=$(date +%s)
if [ "${BENCH:-1}" = 0 ]; then
    : >"$out/bench.csv"
    echo "bench skipped (BENCH=0)" >"$out/bench.log"
    bench_rc=0
else
    timeout -s INT -k 20 "${BENCH_S:-100}" "$bin" bench --model Llama-2-7B \
        --precision "${precisions:-fp16}" --kernels fused,reference --batch 1,64 \
        --prompt-len 32 --gen 16 --device cuda --runs 1 --warmup 1 --idle 0 --stabilize 0 \
        --min-window 0 --reruns 0 --cv-tok 100 --cv-power 100 --max-uncert 100 \
        --db "$out/arch.db" --format csv >"$out/bench.csv" 2>"$out/bench.log"
    bench_rc=$?
fi
bench_s=$(($(date +%s) - t2))

{
    echo "arch-check $archs on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
    echo "  SASS: $(cat "$out/elf.txt")  PTX: $(cat "$out/ptx.txt")"
    echo "  build ${build_s} s; GPU tests ${tests_s} s: $(grep -E 'tests passed|tests failed' "$out/tests.log" | tail -1) (exit $tests_rc)"
    echo "  code: ${code:-not reported}"
    echo "  code of this build for GPU 0 (ecocompute gpus): $("$bin" gpus --format json 2>/dev/null |
        python3 -c 'import json, sys; g = json.load(sys.stdin)[0]; print(g["cuda_code"], "|", g["kernel_features"], "|", g["limits"])')"
    echo "  bench ${bench_s} s (exit $bench_rc): ${precisions}${refusal:+; bf16 refused: $refusal}"
    python3 - "$out/bench.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]))) if open(sys.argv[1]).read().strip() else []
print(f"  {'precision':<11} {'kernels':<9} {'batch':>5} {'tok/s':>12} {'gate':>13}")
for r in rows:
    get = lambda *keys: next((r[k] for k in keys if r.get(k) not in (None, "")), "")
    print(f"  {get('precision'):<11} {get('kernels'):<9} {get('batch'):>5} "
          f"{get('tok_s_mean'):>12} {get('gate'):>13}")
PY
} | tee "$out/arch-$name.txt"
[ $tests_rc -eq 0 ] && [ $bench_rc -eq 0 ]
