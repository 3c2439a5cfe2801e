#!/usr/bin/env bash
# fuzz.sh [SECONDS] [TARGET...] — builds the libFuzzer targets (tests/fuzz) with clang in their
# own build folder and runs each for SECONDS (default 20) from its seed corpus; fails if any input
# crashes, leaks, hangs or trips a sanitizer, and keeps that input. Without clang it says so and
# exits 0 (the fuzzers need clang's libFuzzer). scripts/test.sh calls it; docs/testing.md.
# The seed corpora are copied to a temporary folder first: libFuzzer adds the inputs it finds to
# its corpus folder, and the repository must not change under a test run.
# Environment: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_ARTIFACTS (where a failing input is kept;
# default $FUZZ_BUILD_DIR/artifacts), FUZZ_CC (the clang to use; default clang), FUZZ_CXX (its
# C++ compiler; default clang++ of the same name).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
[ $# -eq 0 ] || shift
case $secs in
  '' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, not '$secs'" >&2; exit 2 ;;
esac
cc=${FUZZ_CC:-clang}
command -v "$cc" >/dev/null || { echo "fuzz.sh: $cc not found: fuzz targets not run"; exit 0; }
case $("$cc" --version 2>/dev/null) in *clang*) ;; *)
  echo "fuzz.sh: $cc is not clang: fuzz targets not run"; exit 0 ;;
esac
# clang without its runtimes (Debian's libclang-rt-dev, which clang only recommends) cannot link a
# fuzzer: say so rather than fail the build.
probe=$(mktemp)
if ! printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return d && n; }\n' |
  "$cc" -fsanitize=fuzzer,address,undefined -x c - -o "$probe" 2>/dev/null; then
  rm -f "$probe"
  echo "fuzz.sh: $cc cannot link libFuzzer with ASan/UBSan (install libclang-rt-dev):" \
    "fuzz targets not run"
  exit 0
fi
rm -f "$probe"
dir=${FUZZ_BUILD_DIR:-build-fuzz}
artifacts=${FUZZ_ARTIFACTS:-$dir/artifacts}

# The C++ of the SentencePiece shim links the targets, so the C++ compiler is clang's too.
cxx=${FUZZ_CXX:-${cc/clang/clang++}}
cmake -S . -B "$dir" -DECOCOMPUTE_FUZZ=ON -DECOCOMPUTE_CUDA=OFF -DBUILD_TESTING=OFF \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
list=$dir/tests/fuzz/fuzzers.txt # NAME|binary|dictionary|corpus folders (tests/fuzz/CMakeLists.txt)
mapfile -t all < <(cut -d'|' -f1 "$list")
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
for t in "${targets[@]}"; do
  grep -q "^$t|" "$list" || { echo "fuzz.sh: no fuzz target '$t' (${all[*]})" >&2; exit 2; }
done
cmake --build "$dir" -j "$(nproc)" --target "${targets[@]}" >/dev/null

# In memory where possible: fuzz_seed_import writes every input to a file.
tmp=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=()
for t in "${targets[@]}"; do
  IFS='|' read -r -a fields < <(grep "^$t|" "$list")
  bin=${fields[1]} dict=${fields[2]:-}
  work=$tmp/$t
  mkdir -p "$work/corpus" "$work/artifacts"
  for c in "${fields[@]:3}"; do
    [ -z "$c" ] || cp -r "$c" "$work/corpus/$(basename "$c")"
  done
  opts=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$work/artifacts/")
  [ -z "$dict" ] || opts+=(-dict="$dict")
  rc=0
  (cd "$work" && TMPDIR=$work "$bin" "${opts[@]}" corpus) >"$work/log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
  if [ $rc -eq 0 ]; then
    echo "fuzz $t: ${execs:-?} inputs in ${secs} s, no failure"
  else
    mkdir -p "$artifacts"
    cp "$work"/artifacts/* "$artifacts/" 2>/dev/null || true
    grep -m1 -E "ERROR|runtime error|SUMMARY|deadly signal" "$work/log" >&2 ||
      tail -5 "$work/log" >&2
    echo "fuzz $t: FAILED (exit $rc) after ${execs:-?} inputs; input kept in $artifacts:" \
      "$(cd "$work/artifacts" && ls | tr '\n' ' ')" >&2
    failed+=("$t")
  fi
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzz.sh: failures in ${failed[*]}" >&2; exit 1; }
