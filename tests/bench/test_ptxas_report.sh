#!/usr/bin/env bash
# test_ptxas_report.sh — bench/ptxas_report.py's reading of a ptxas -v log: registers and spills
# per entry function and target, a non-inlined device function's properties not taken for a
# kernel's, --spills keeping only the kernels that spill; and its usage errors. (Compiling needs
# a configured CUDA build; the log is what nvcc -Xptxas=-v prints.)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
command -v python3 >/dev/null || { echo "skipping: no python3"; exit 77; }
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
report() { python3 "$root/bench/ptxas_report.py" "$@"; }

cat >"$tmp/log" <<'LOG'
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z5tightv' for 'sm_90a'
ptxas info    : Function properties for _Z5tightv
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 128 registers, used 1 barriers, 4096 bytes smem
ptxas info    : Compile time = 10.0 ms
ptxas info    : Function properties for _Z6helperv
    48 bytes stack frame, 40 bytes spill stores, 40 bytes spill loads
ptxas info    : Compiling entry function '_Z6spillyv' for 'sm_90a'
ptxas info    : Function properties for _Z6spillyv
    304 bytes stack frame, 304 bytes spill stores, 76 bytes spill loads
ptxas info    : Used 80 registers, used 1 barriers
ptxas info    : Compiling entry function '_Z5tightv' for 'sm_80'
ptxas info    : Function properties for _Z5tightv
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 96 registers
LOG

out=$(report --parse "$tmp/log")
check "exit 0" "[ $? -eq 0 ]"
check "a header and one line per kernel and target" "[ $(printf '%s\n' "$out" | wc -l) -eq 4 ]"
check "the spilling kernel's registers and bytes" \
    "printf '%s\n' \"\$out\" | grep -qx '80 | 304 | 76 | sm_90a | - | spilly()'"
check "each target its own line" \
    "printf '%s\n' \"\$out\" | grep -qx '96 | 0 | 0 | sm_80 | - | tight()'"
check "a device function's spills not given to the next kernel" \
    "printf '%s\n' \"\$out\" | grep -qx '128 | 0 | 0 | sm_90a | - | tight()'"
out=$(report --parse - --spills <"$tmp/log")
check "--spills keeps the one that spills" \
    "[ \"\$(printf '%s\n' \"\$out\" | tail -n +2)\" = '80 | 304 | 76 | sm_90a | - | spilly()' ]"

report --parse "$tmp/none" >/dev/null 2>"$tmp/err"
check "a missing log: exit 2" "[ $? -eq 2 ]"
check "a missing log: named" "grep -q \"cannot read $tmp/none\" \"$tmp/err\""
report --parse "$tmp/log" x.cu >/dev/null 2>&1
check "--parse with a source: exit 2" "[ $? -eq 2 ]"
report --build "$tmp" >/dev/null 2>"$tmp/err"
check "no compile_commands.json: exit 2" "[ $? -eq 2 ]"
check "no compile_commands.json: named" "grep -q 'compile_commands.json' \"$tmp/err\""

exit $fail
