#!/usr/bin/env bash
# test_models_cli.sh — `ecocompute models`: JSON parses and carries every catalog model with its
# parameter count and per-precision bytes; CSV and table agree on the row count; bad flags exit 2.
set -u
bin=${EC_BINARY:?}
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }

json=$("$bin" models --format json); rc=$?
check "json exits 0" '[ $rc -eq 0 ]'
check "json parses with 15+ models, Llama-2-7B at 6.74B, bytes ordered" 'printf "%s" "$json" | python3 -c "
import json, sys
rows = json.load(sys.stdin)
assert len(rows) >= 15, len(rows)
m = {r[\"name\"]: r for r in rows}
l2 = m[\"Llama-2-7B\"]
assert abs(l2[\"params_b\"] - 6.738) < 0.001, l2
assert abs(l2[\"fp16_gb\"] - 2 * l2[\"params_b\"]) < 0.002, l2
for r in rows:
    assert r[\"fp16_gb\"] > r[\"int8_gb\"] > r[\"nf4_gb\"] > r[\"nf4-dq_gb\"] > 0, r
    assert r[\"int8_gb\"] == r[\"fp8_gb\"], r
assert {\"tiny\", \"small\", \"Qwen2.5-14B\"} <= set(m)
"'
csv_rows=$("$bin" models --format csv | wc -l)
check "csv: header + one row per model" '[ "$csv_rows" -eq $(( $(printf "%s" "$json" | python3 -c "import json,sys; print(len(json.load(sys.stdin)))") + 1 )) ]'
out=$("$bin" models); check "table lists Mistral" '[[ "$out" == *Mistral-7B-v0.2* ]]'
"$bin" models --format xml >/dev/null 2>&1; check "bad format exits 2" '[ $? -eq 2 ]'
"$bin" models --format >/dev/null 2>&1; check "missing value exits 2" '[ $? -eq 2 ]'
[ $fail -eq 0 ] && echo "models cli: pass"
exit $fail
