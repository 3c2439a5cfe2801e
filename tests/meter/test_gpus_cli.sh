#!/usr/bin/env bash
# test_gpus_cli.sh — `ecocompute gpus` with the fake NVML (table, --json, csv) and without a driver.
set -u
bin=${EC_BINARY:?}
export ECOCOMPUTE_NVML_LIBRARY=${FAKE_NVML_LIBRARY:?} FAKE_NVML="gpus=2 power=123 gpu1.counter=off"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }

"$bin" gpus >"$tmp/t" 2>&1; rc=$?
check "table exits 0" '[ $rc -eq 0 ]'
check "table has both GPUs" 'grep -q "Fake H100 0" "$tmp/t" && grep -q "Fake H100 1" "$tmp/t"'
check "table shows power with unit" 'grep -Eq "power now, instant \(W\) +123.0 +123.0" "$tmp/t"'

"$bin" gpus --json >"$tmp/j" 2>/dev/null
check "json parses with 2 GPUs and capabilities" \
  'python3 -c "import json,sys; g=json.load(open(sys.argv[1])); sys.exit(0 if len(g)==2 and g[0][\"energy_counter\"]==\"yes\" and g[1][\"energy_counter\"]==\"no\" and g[1][\"pci_bus_id\"]==\"00000000:1B:00.0\" and g[0][\"power_limit_w\"]==700 else 1)" "$tmp/j"'
# Compute capability, bandwidth (2 x 2619 MHz x 5120 bits / 8 = 3352 GB/s) and what this build
# runs: a Turing GPU (7.5) never gets bf16; without a bus width there is no bandwidth.
FAKE_NVML="gpus=2 gpu1.cc=7.5 gpu1.bus=0" "$bin" gpus --json >"$tmp/cc" 2>/dev/null
check "json: compute capability, bandwidth, precisions" \
  'python3 -c "
import json, sys
g = json.load(open(sys.argv[1]))
ok = g[0][\"compute_capability\"] == \"9.0\" and g[1][\"compute_capability\"] == \"7.5\"
ok = ok and round(g[0][\"mem_bandwidth_gbs\"]) == 3352 and g[1][\"mem_bandwidth_gbs\"] is None
ok = ok and \"bf16\" not in g[1][\"precisions\"].split()
if g[0][\"cuda_code\"] == \"none (no CUDA backend)\":
    ok = ok and g[0][\"precisions\"] == \"\"
elif g[0][\"cuda_code\"] != \"none\":
    ok = ok and \"bf16\" in g[0][\"precisions\"].split() and g[0][\"kernel_families\"] == \"fused reference\"
sys.exit(0 if ok else 1)" "$tmp/cc"'
"$bin" gpus >"$tmp/t2" 2>&1
check "table shows compute capability and bandwidth" \
  'grep -Eq "compute capability +9.0 +9.0" "$tmp/t2" && grep -Eq "memory bandwidth, theoretical \(GB/s\) +3352" "$tmp/t2"'
"$bin" gpus --format json | cmp -s - "$tmp/j"
check "--json equals --format json" '[ $? -eq 0 ]'
"$bin" gpus --format csv >"$tmp/c"
check "csv header and 2 rows" '[ "$(head -1 "$tmp/c" | cut -d, -f1-3)" = "index,name,uuid" ] && [ $(wc -l <"$tmp/c") -eq 3 ]'

out=$(ECOCOMPUTE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 "$bin" gpus 2>"$tmp/e"); rc=$?
check "no driver: exit 1" '[ $rc -eq 1 ]'
check "no driver: nothing on stdout" '[ -z "$out" ]'
check "no driver: message" 'grep -q "cannot load" "$tmp/e"'
"$bin" gpus --format yaml >/dev/null 2>&1; check "bad format exits 2" '[ $? -eq 2 ]'
"$bin" gpus extra >/dev/null 2>&1; check "stray argument exits 2" '[ $? -eq 2 ]'

[ $fail -eq 0 ] && echo "gpus cli: all checks pass"
exit $fail
