#!/usr/bin/env bash
# test_shard_cli.sh — `bench --shard I/N` with the CPU engine and the fake NVML: every shard of a
# small sweep run one after another into its own database, the shard databases merged with
# `ecocompute import`, and the merge compared with the same sweep run unsharded: the same
# configurations with the same run counts, nothing lost, nothing twice, each shard's session and
# GPU kept. Also: shards are disjoint, --resume continues a shard only, bad --shard values.
set -u
bin=${EC_BINARY:?}
fake=${FAKE_NVML_LIBRARY:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
export ECOCOMPUTE_NVML_LIBRARY=$fake FAKE_NVML="gpus=1 power=120"
# 2 precisions x 2 batches x 2 generation lengths = 8 configurations, 2 runs each; gates so wide
# (and no re-runs) that every configuration stores exactly 2 runs.
sweep=(--model tiny --precision fp16,int8 --batch 1,2 --gen 4,6 --prompt-len 4 --runs 2 --warmup 0
       --idle 0 --stabilize 0 --reruns 0 --cv-tok 1000 --cv-power 1000 --threads 1)
# configs EXPORT.csv: "model precision kernels batch prompt gen count" per configuration, sorted.
configs() {
  python3 - "$1" <<'PY'
import csv, sys, collections
c = collections.Counter()
for r in csv.DictReader(open(sys.argv[1])):
    c[(r["model"], r["precision"], r["kernels"], r["batch"], r["prompt_len"], r["gen_len"])] += 1
for k in sorted(c):
    print(" ".join(k), c[k])
PY
}

"$bin" bench "${sweep[@]}" --db "$tmp/full.db" >/dev/null 2>"$tmp/full.err"
check "unsharded sweep exits 0" '[ $? -eq 0 ]'
"$bin" export --db "$tmp/full.db" --format csv >"$tmp/full.csv"
configs "$tmp/full.csv" >"$tmp/full.cfg"
check "unsharded: 8 configurations of 2 runs" '[ "$(wc -l <"$tmp/full.cfg")" -eq 8 ] && ! grep -qv " 2$" "$tmp/full.cfg"'

for i in 1 2 3; do
  FAKE_NVML="gpus=1 power=120" "$bin" bench "${sweep[@]}" --shard "$i/3" --db "$tmp/s$i.db" >/dev/null 2>"$tmp/s$i.err"
  check "shard $i/3 exits 0" '[ $? -eq 0 ]'
  "$bin" export --db "$tmp/s$i.db" --format csv >"$tmp/s$i.csv"
  configs "$tmp/s$i.csv" >"$tmp/s$i.cfg"
done
# Positions 0,3,6 / 1,4,7 / 2,5 of the canonical order.
check "shard sizes 3, 3, 2" \
  '[ "$(wc -l <"$tmp/s1.cfg")" -eq 3 ] && [ "$(wc -l <"$tmp/s2.cfg")" -eq 3 ] && [ "$(wc -l <"$tmp/s3.cfg")" -eq 2 ]'
check "shards are disjoint" '[ -z "$(cat "$tmp"/s?.cfg | sort | uniq -d)" ]'
check "shard 1 holds positions 0, 3, 6" \
  'grep -q "ecocompute bench: 3 configurations" "$tmp/s1.err" && grep -q "config 1/3 tiny fp16 fused batch 1 prompt 4 gen 4" "$tmp/s1.err"'

"$bin" import --db "$tmp/merged.db" "$tmp/s1.db" "$tmp/s2.db" "$tmp/s3.db" >"$tmp/import.out" 2>&1
check "import of the shard databases exits 0" '[ $? -eq 0 ]'
"$bin" export --db "$tmp/merged.db" --format csv >"$tmp/merged.csv"
configs "$tmp/merged.csv" >"$tmp/merged.cfg"
check "merged = unsharded: same configurations, same run counts" 'diff "$tmp/full.cfg" "$tmp/merged.cfg"'
check "merged: 16 runs" '[ "$(($(wc -l <"$tmp/merged.csv") - 1))" -eq 16 ]'
# Provenance: each shard's session stays distinct, and the GPU UUID is kept on every run.
sessions=$(python3 -c 'import csv,sys; print(len({r["session_id"] for r in csv.DictReader(open(sys.argv[1]))}))' "$tmp/merged.csv")
check "merged: 3 sessions, one per shard (got $sessions)" '[ "$sessions" -eq 3 ]'
check "merged: every run keeps its GPU UUID" \
  'python3 -c "import csv,sys; sys.exit(0 if all(r[\"gpu_uuid\"].startswith(\"GPU-\") for r in csv.DictReader(open(sys.argv[1]))) else 1)" "$tmp/merged.csv"'
"$bin" import --db "$tmp/merged.db" "$tmp/s2.db" >/dev/null 2>&1
"$bin" export --db "$tmp/merged.db" --format csv >"$tmp/merged2.csv"
check "importing a shard twice adds nothing" '[ "$(wc -l <"$tmp/merged2.csv")" -eq "$(wc -l <"$tmp/merged.csv")" ]'

# --resume knows it is a shard: nothing left, and only the shard's 3 configurations.
"$bin" bench --resume --db "$tmp/s2.db" >/dev/null 2>"$tmp/resume.err"
check "resume of a finished shard exits 0" '[ $? -eq 0 ]'
check "resume covers the shard's 3 configurations" 'grep -q "3 configurations finished (3 measured before)" "$tmp/resume.err"'

# Bad values: usage errors on one line; a shard beyond the sweep's size is a failure.
for bad in 0/3 4/3 3 a/b 1/0 -1/2; do
  err=$("$bin" bench "${sweep[@]}" --shard "$bad" --db "$tmp/bad.db" 2>&1 >/dev/null); rc=$?
  check "--shard $bad: exit 2 (got $rc)" '[ $rc -eq 2 ] && [ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ]'
done
err=$("$bin" bench --model tiny --gen 4 --prompt-len 4 --runs 2 --warmup 0 --idle 0 --stabilize 0 \
      --shard 2/2 --db "$tmp/empty.db" 2>&1 >/dev/null); rc=$?
check "empty shard: exit 1 naming it (got $rc: $err)" '[ $rc -eq 1 ] && [[ "$err" == *"shard 2/2"*empty* ]]'

[ $fail -eq 0 ] && echo "shard: all checks pass"
exit $fail
