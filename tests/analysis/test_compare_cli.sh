#!/usr/bin/env bash
# test_compare_cli.sh — `ecocompute compare BASE NEW` on exports whose energies are set by hand
# (from a tiny CPU sweep with the fake NVML as the template), so every verdict is known: a +20 %
# regression (worse, exit 1), a -20 % improvement, a significant +2 % (within threshold), equal
# means (no significant change), one run on a side (too few runs), a configuration only in BASE;
# thresholds, alpha, net energy, databases as inputs, the md/json/csv formats and usage errors.
set -u
bin=${EC_BINARY:?}
fake=${FAKE_NVML_LIBRARY:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
export ECOCOMPUTE_NVML_LIBRARY=$fake FAKE_NVML="gpus=1 power=100"

"$bin" bench --model tiny --batch 1,2,3,4,5,6 --gen 2 --prompt-len 2 --runs 5 --warmup 0 --idle 0 \
  --stabilize 0 --reruns 0 --cv-tok 1000 --cv-power 1000 --threads 1 --db "$tmp/t.db" >/dev/null 2>&1
"$bin" export --db "$tmp/t.db" --format csv >"$tmp/template.csv"
check "template has 30 runs" '[ "$(($(wc -l <"$tmp/template.csv") - 1))" -eq 30 ]'
# Batch b's runs get energies base[i] in BASE and new(b)[i] in NEW (J/1k tokens, gross and net).
python3 - "$tmp" <<'PY'
import csv, sys
tmp = sys.argv[1]
rows = list(csv.DictReader(open(f"{tmp}/template.csv")))
base = [100.0, 101.0, 99.0, 100.5, 99.5]
new = {1: [v * 1.2 for v in base],                 # worse: +20 %
       2: [v * 0.8 for v in base],                 # better: -20 %
       3: [v + 2.0 for v in base],                 # significant +2 %: within a 5 % threshold
       4: [100.5, 99.5, 101.0, 99.0, 100.0],       # same mean: no significant change
       5: [100.0],                                 # one run: too few runs
       6: []}                                      # only in BASE
def write(name, energy):
    out, seen = [], {}
    for r in rows:
        b = int(r["batch"]); k = seen.get(b, 0); seen[b] = k + 1
        vals = energy(b)
        if k >= len(vals): continue
        r = dict(r); r["j_per_1k_gross"] = str(vals[k]); r["j_per_1k_net"] = str(vals[k] / 2)
        r["tok_s"] = str(1000.0 / vals[k])
        out.append(r)
    w = csv.DictWriter(open(f"{tmp}/{name}", "w", newline=""), fieldnames=rows[0].keys())
    w.writeheader(); w.writerows(out)
write("base.csv", lambda b: base)
write("new.csv", lambda b: new[b])
write("same.csv", lambda b: new[4] if b != 1 else base)
PY
# verdict CSV BATCH: the verdict of the configuration of that batch (CSV lines end in CRLF).
verdict() { awk -F, -v b="$2" 'NR > 1 && $5 == b { sub(/\r$/, "", $NF); print $NF }' "$1"; }

"$bin" compare "$tmp/base.csv" "$tmp/new.csv" --format csv >"$tmp/out.csv" 2>"$tmp/err"; rc=$?
check "a regression exits 1 (got $rc)" '[ $rc -eq 1 ]'
check "+20 %: worse" '[ "$(verdict "$tmp/out.csv" 1)" = worse ]'
check "-20 %: better" '[ "$(verdict "$tmp/out.csv" 2)" = better ]'
check "+2 % significant: within threshold" '[ "$(verdict "$tmp/out.csv" 3)" = "within threshold" ]'
check "same mean: no significant change" '[ "$(verdict "$tmp/out.csv" 4)" = "no significant change" ]'
check "one run: too few runs" '[ "$(verdict "$tmp/out.csv" 5)" = "too few runs" ]'
check "only in BASE: not compared" '[ -z "$(verdict "$tmp/out.csv" 6)" ] && grep -q "1 only in BASE" "$tmp/err"'
check "delta +20.00 % with a CI around it" \
  'awk -F, "NR > 1 && \$5 == 1 { exit !(\$14 == 20.00 && \$15 < 20 && \$16 > 20 && \$17 < 0.001) }" "$tmp/out.csv"'
check "delta tok/s reported (-16.67 % for +20 % energy)" \
  'awk -F, "NR > 1 && \$5 == 1 { exit !(\$21 == -16.67) }" "$tmp/out.csv"'
check "stderr summary counts 1 worse, 1 better" 'grep -q "1 worse beyond +5 % at p < 0.05, 1 better, 1 with too few runs" "$tmp/err"'

"$bin" compare "$tmp/base.csv" "$tmp/new.csv" --max-regression 25 >/dev/null 2>&1
check "--max-regression 25 tolerates +20 % (exit 0)" '[ $? -eq 0 ]'
"$bin" compare "$tmp/base.csv" "$tmp/new.csv" --max-regression 1 --format csv >"$tmp/t1.csv" 2>/dev/null
check "--max-regression 1: +2 % becomes worse" '[ "$(verdict "$tmp/t1.csv" 3)" = worse ]'
"$bin" compare "$tmp/base.csv" "$tmp/new.csv" --max-regression 1 --alpha 1e-9 --format csv >"$tmp/t2.csv" 2>/dev/null
check "--alpha 1e-9: +2 % no longer significant" '[ "$(verdict "$tmp/t2.csv" 3)" = "no significant change" ]'
"$bin" compare "$tmp/base.csv" "$tmp/new.csv" --energy net --format csv >"$tmp/net.csv" 2>/dev/null
check "--energy net compares net figures (base 50 J/1k)" \
  'awk -F, "NR > 1 && \$5 == 4 { exit !(\$10 == \"net\" && \$11 == 50.00) }" "$tmp/net.csv"'
"$bin" compare "$tmp/base.csv" "$tmp/same.csv" >"$tmp/same.out" 2>/dev/null
check "no regression: exit 0" '[ $? -eq 0 ]'
check "table fits 120 columns" '[ "$(python3 -c "import sys; print(max(len(l.rstrip(chr(10))) for l in open(sys.argv[1], encoding=\"utf-8\")))" "$tmp/same.out")" -le 120 ]'

"$bin" compare "$tmp/base.csv" "$tmp/new.csv" --format md >"$tmp/out.md" 2>/dev/null
check "md: headline names the regression" 'head -1 "$tmp/out.md" | grep -q "Energy regression: 1 of 5 configurations"'
check "md: a table row per configuration" '[ "$(grep -c "^| tiny " "$tmp/out.md")" -eq 5 ]'
check "md: worse in bold" 'grep -q "| \*\*worse\*\* |" "$tmp/out.md"'
"$bin" compare "$tmp/base.csv" "$tmp/new.csv" --format json >"$tmp/out.json" 2>/dev/null
check "json: 5 objects with verdicts" \
  'python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if len(j) == 5 and sorted(x[\"verdict\"] for x in j)[0] == \"better\" else 1)" "$tmp/out.json"'

# Databases work as BASE and NEW (the template's own database against its export: unchanged).
"$bin" compare "$tmp/t.db" "$tmp/template.csv" --format csv >"$tmp/db.csv" 2>/dev/null
check "database vs export of itself: exit 0, 6 unchanged" \
  '[ $? -eq 0 ] && [ "$(grep -c "no significant change" "$tmp/db.csv")" -eq 6 ]'

# Errors: nothing in common is a failure; bad flags are usage errors on one line.
"$bin" compare "$tmp/base.csv" "$tmp/base.csv" --format csv >/dev/null 2>&1
check "identical inputs: exit 0" '[ $? -eq 0 ]'
head -1 "$tmp/base.csv" >"$tmp/empty.csv"
err=$("$bin" compare "$tmp/base.csv" "$tmp/empty.csv" 2>&1 >/dev/null); rc=$?
check "nothing in common: exit 1, one line" '[ $rc -eq 1 ] && [ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ]'
err=$("$bin" compare "$tmp/base.csv" "$tmp/missing.csv" 2>&1 >/dev/null); rc=$?
check "missing file: exit 1 naming it" '[ $rc -eq 1 ] && [[ "$err" == *missing.csv* ]]'
for args in "$tmp/base.csv" "a b c" "--alpha 0 a b" "--alpha 2 a b" "--max-regression -1 a b" \
            "--energy both a b" "--format xml a b"; do
  # shellcheck disable=SC2086
  err=$("$bin" compare $args 2>&1 >/dev/null); rc=$?
  check "usage error for '$args' (got $rc)" '[ $rc -eq 2 ] && [ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ]'
done

[ $fail -eq 0 ] && echo "compare: all checks pass"
exit $fail
