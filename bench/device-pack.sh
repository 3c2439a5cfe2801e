#!/usr/bin/env bash
# device-pack.sh [BUILD_DIR] — run HERE (the development machine) before a GPU call: builds
# ecocompute as one shared library (-DBUILD_SHARED_LIBS=ON, in BUILD_DIR, default build-dev) with
# the CLI, kernel_bench, the CUPTI kernel tracer and the CUDA tests, and gathers them, stripped,
# into .devpack/ (git-ignored) with what the GPU machine lacks: the cJSON, cmocka and CUPTI
# runtime libraries. Statically linked, every binary carries all GPU kernels (~22 MB each) and a
# device call carries at most 64 MiB; shared, they travel once. Carry `.devpack` in the call;
# bench/gpu.sh finds it there (the packed CLI, the test binaries for its `tests` step). The real
# models the tests read travel with the working tree (tests/data).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-dev}
targets=(ecocompute_cli kernel_bench kernel_trace test_cuda_kernels test_cuda_int8 test_cuda_nf4_fp8 test_cuda_model test_cuda_tp)
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_SHARED_LIBS=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90a >/dev/null
cmake --build "$dir" -j "$(nproc)" --target "${targets[@]}"
rm -rf .devpack
mkdir -p .devpack/bin .devpack/lib
strip -o .devpack/lib/libecocompute.so "$dir/libecocompute.so"
strip -o .devpack/bin/ecocompute "$dir/ecocompute"
strip -o .devpack/bin/kernel_bench "$dir/bench/kernel_bench"
strip -o .devpack/lib/libkernel_trace.so "$dir/bench/libkernel_trace.so"
cp -L "$(ldd "$dir/bench/libkernel_trace.so" | awk '/libcupti/ {print $3}')" .devpack/lib/
for t in test_cuda_kernels test_cuda_int8 test_cuda_nf4_fp8 test_cuda_model test_cuda_tp; do
  strip -o ".devpack/bin/$t" "$(find "$dir/tests" -name "$t" -type f -perm -u+x | head -1)"
done
# Every Debian library the binaries load that the GPU machine may lack (it has glibc, the driver
# and the CUDA toolkit, and no -dev packages): cJSON, cmocka, and the optional ones the build
# found (libmicrohttpd, PCRE2, SentencePiece, ICU, ...), xz-packed (ICU's data alone is ~30 MB);
# bench/gpu.sh unpacks them.
{
  for f in .devpack/bin/* .devpack/lib/*.so; do ldd "$f" 2>/dev/null; done
  for lib in libcjson.so.1 libcmocka.so.0; do
    echo "$lib => $(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')"
  done
} | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libgcc_s|libstdc\+\+|libcuda|libnvidia[^/]*|libcudart|libcublas[^/]*|libcupti|libecocompute|libkernel_trace)\.so' \
  >.devpack/syslibs.txt || true
tar -cJf .devpack/syslibs.tar.xz --dereference --transform 's,.*/,,' -T .devpack/syslibs.txt
git rev-parse --short=12 HEAD >.devpack/commit.txt
git diff --quiet HEAD -- src include || echo "(built with uncommitted changes to src/ or include/)" >>.devpack/commit.txt
du -sh .devpack >&2
