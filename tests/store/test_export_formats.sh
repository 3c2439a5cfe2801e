#!/usr/bin/env bash
# test_export_formats.sh — `export --format jsonl|md|sql` and `export --dataset DIR` on a small
# database (an H100 sweep export plus a seed file with its own source, licence and net energy):
# sqlite3 loads the SQL with every row, JSONL lines parse and import back to the same runs, the
# Markdown table has one line per run, and --dataset writes runs.jsonl and a dataset card without
# ever writing over files it did not create.
set -u
bin=${EC_BINARY:?}
data=${EC_TEST_DATA:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
"$bin" import --db "$tmp/a.db" "$data/report/h100-packed-b1-b8.csv" \
  "$data/seed-data/ecocompute-dynamic-eval/metadata/pure_int8_metadata.json" >/dev/null 2>&1
"$bin" export --db "$tmp/a.db" -o "$tmp/a.csv" 2>/dev/null
n=$(($(wc -l <"$tmp/a.csv") - 1))
check "the test database has runs ($n)" '[ "$n" -ge 50 ]'
ncols=$(head -1 "$tmp/a.csv" | tr ',' '\n' | wc -l)

# SQL: sqlite3 loads it; every row, every column; a value as exact as the CSV's; appendable.
"$bin" export --db "$tmp/a.db" --format sql -o "$tmp/a.sql" 2>/dev/null; rc=$?
check "export --format sql: exit 0" '[ $rc -eq 0 ]'
sqlite3 "$tmp/l.db" <"$tmp/a.sql"; rc=$?
check "sqlite3 loads the SQL" '[ $rc -eq 0 ]'
check "SQL: $n rows" '[ "$(sqlite3 "$tmp/l.db" "select count(*) from ecocompute_runs")" -eq "$n" ]'
check "SQL: $ncols columns" '[ "$(sqlite3 "$tmp/l.db" "select count(*) from pragma_table_info(\"ecocompute_runs\")")" -eq "$ncols" ]'
want=$(python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); print(repr(float(r[0]["tok_s"])), r[0]["gpu_uuid"])' "$tmp/a.csv")
got=$(python3 -c 'import sqlite3,sys; t,u=sqlite3.connect(sys.argv[1]).execute("select tok_s, gpu_uuid from ecocompute_runs limit 1").fetchone(); print(repr(t), u)' "$tmp/l.db")
check "SQL: first row's tok_s and GPU as in the CSV ($got vs $want)" '[ "$got" = "$want" ]'
check "SQL: unknown values are NULL" '[ "$(sqlite3 "$tmp/l.db" "select count(*) from ecocompute_runs where kl_vs_f32 is null")" -eq "$n" ]'
sqlite3 "$tmp/l.db" <"$tmp/a.sql"
check "SQL: a second load appends" '[ "$(sqlite3 "$tmp/l.db" "select count(*) from ecocompute_runs")" -eq $((2 * n)) ]'
"$bin" export --db "$tmp/a.db" --format sql 2>/dev/null | sqlite3 "$tmp/p.db"
check "SQL through a pipe" '[ "$(sqlite3 "$tmp/p.db" "select count(*) from ecocompute_runs")" -eq "$n" ]'

# JSONL: one object per run with every column; reads back as the same runs.
"$bin" export --db "$tmp/a.db" --format jsonl -o "$tmp/a.jsonl" 2>/dev/null; rc=$?
check "export --format jsonl: exit 0" '[ $rc -eq 0 ]'
check "JSONL: $n lines" '[ "$(wc -l <"$tmp/a.jsonl")" -eq "$n" ]'
python3 - "$tmp/a.jsonl" "$ncols" <<'PY' || { echo "FAIL: JSONL lines parse as objects of every column"; fail=1; }
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    assert isinstance(o, dict) and len(o) == int(sys.argv[2]), line[:80]
    assert next(iter(o)) == "source"
PY
"$bin" import --db "$tmp/b.db" "$tmp/a.jsonl" >/dev/null 2>&1; rc=$?
check "import of the JSONL: exit 0" '[ $rc -eq 0 ]'
"$bin" export --db "$tmp/b.db" -o "$tmp/b.csv" 2>/dev/null
check "JSONL -> import -> export: the same CSV" 'cmp -s <(cut -d, -f5 --complement "$tmp/a.csv") <(cut -d, -f5 --complement "$tmp/b.csv")'

# Markdown: a header, the separator, one line per run, the same number of cells on each.
"$bin" export --db "$tmp/a.db" --format md -o "$tmp/a.md" 2>/dev/null; rc=$?
check "export --format md: exit 0" '[ $rc -eq 0 ]'
check "md: $n + 2 lines" '[ "$(wc -l <"$tmp/a.md")" -eq $((n + 2)) ]'
check "md: every line a table row of equal cells" '[ "$(awk -F"|" "{print NF}" "$tmp/a.md" | sort -u | wc -l)" -eq 1 ] && ! grep -qv "^|" "$tmp/a.md"'

# -o: an earlier export of any format may be replaced; a foreign file may not.
"$bin" export --db "$tmp/a.db" --format csv -o "$tmp/a.md" 2>/dev/null; rc=$?
check "-o over an earlier md export: allowed" '[ $rc -eq 0 ]'
"$bin" export --db "$tmp/a.db" --format md -o "$tmp/a.sql" 2>/dev/null; rc=$?
check "-o over an earlier sql export: allowed" '[ $rc -eq 0 ]'
echo "my notes" >"$tmp/notes.md"
"$bin" export --db "$tmp/a.db" --format md -o "$tmp/notes.md" 2>/dev/null; rc=$?
check "-o over a foreign file: exit 2, kept" '[ $rc -eq 2 ] && [ "$(cat "$tmp/notes.md")" = "my notes" ]'
"$bin" export --db "$tmp/a.db" --summary --format sql >/dev/null 2>&1; rc=$?
check "--summary --format sql: exit 2" '[ $rc -eq 2 ]'
"$bin" export --db "$tmp/a.db" --format yaml >/dev/null 2>&1; rc=$?
check "--format yaml: exit 2" '[ $rc -eq 2 ]'

# --dataset: runs.jsonl and a card naming every column, the energy definitions, the licence and
# the provenance of the rows.
ds=$tmp/ds
"$bin" export --db "$tmp/a.db" --dataset "$ds" 2>"$tmp/err"; rc=$?
check "--dataset: exit 0" '[ $rc -eq 0 ]'
check "--dataset: says no licence was chosen" 'grep -q "licence" "$tmp/err"'
check "--dataset: exactly runs.jsonl and README.md" '[ "$(ls "$ds" | tr "\n" " ")" = "README.md runs.jsonl " ]'
check "--dataset: $n runs" '[ "$(wc -l <"$ds/runs.jsonl")" -eq "$n" ]'
card=$ds/README.md
check "card: YAML header naming the data file" '[ "$(head -1 "$card")" = "---" ] && grep -q "data_files: runs.jsonl" "$card"'
check "card: licence unknown without --licence" 'grep -q "^license: unknown$" "$card"'
missing=$(head -1 "$tmp/a.csv" | tr -d '\r' | tr ',' '\n' | while read -r c; do grep -q "^| \`$c\` |" "$card" || echo "$c"; done)
check "card: every column with its unit (missing: $missing)" '[ -z "$missing" ]'
check "card: the unit of tok_s" 'grep -q "^| \`tok_s\` | tokens/s |" "$card"'
check "card: gross and net defined" 'grep -q "\*\*Gross\*\*" "$card" && grep -q "\*\*Net\*\*" "$card"'
check "card: energy definitions by source" 'grep -q "^| ecocompute | gross | 48 |" "$card" && grep -q "pure_int8_metadata.json | net | 6 |" "$card"'
check "card: provenance (commit, GPU, driver)" 'grep -q "| ecocompute | 0.1.0 | 69f5047187c2 | NVIDIA H100 80GB HBM3 | 580.159.04 | 48 |" "$card"'
"$bin" export --db "$tmp/a.db" --dataset "$ds" --licence CC-BY-4.0 2>/dev/null; rc=$?
check "--dataset over an earlier one: exit 0" '[ $rc -eq 0 ]'
check "--licence: own rows carry it" '[ "$(grep -c "\"source\":\"ecocompute\",\"licence\":\"CC-BY-4.0\"" "$ds/runs.jsonl")" -eq 48 ]'
check "--licence: the card lists it by source" 'grep -q "^| ecocompute | CC-BY-4.0 | 48 |" "$card" && grep -q "^license: other$" "$card"'
"$bin" export --db "$tmp/a.db" --dataset "$ds" --licence CC-BY-4.0 --model Qwen2.5-0.5B 2>/dev/null
check "one licence for every row: the YAML says it" 'grep -q "^license: cc-by-4.0$" "$card"'
"$bin" import --db "$tmp/c.db" "$ds/runs.jsonl" >/dev/null 2>&1; rc=$?
check "the dataset imports back" '[ $rc -eq 0 ]'

# Never into a directory of someone else's files, nor over a foreign card or runs file.
mkdir "$tmp/mine" && echo "my notes" >"$tmp/mine/notes.txt"
"$bin" export --db "$tmp/a.db" --dataset "$tmp/mine" 2>"$tmp/err"; rc=$?
check "--dataset into a foreign non-empty dir: exit 2, one line" '[ $rc -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ]'
check "--dataset into a foreign dir: nothing written" '[ "$(ls "$tmp/mine")" = notes.txt ]'
echo "# My dataset" >"$tmp/mine/README.md"
"$bin" export --db "$tmp/a.db" --dataset "$tmp/mine" 2>/dev/null; rc=$?
check "--dataset over a foreign README.md: exit 2, kept" '[ $rc -eq 2 ] && [ "$(cat "$tmp/mine/README.md")" = "# My dataset" ] && [ ! -e "$tmp/mine/runs.jsonl" ]'
echo "x,y" >"$ds/runs.jsonl"
"$bin" export --db "$tmp/a.db" --dataset "$ds" 2>/dev/null; rc=$?
check "--dataset over a foreign runs.jsonl: exit 2, kept" '[ $rc -eq 2 ] && [ "$(cat "$ds/runs.jsonl")" = "x,y" ]'
echo x >"$tmp/file"
"$bin" export --db "$tmp/a.db" --dataset "$tmp/file" 2>/dev/null; rc=$?
check "--dataset FILE: exit 2" '[ $rc -eq 2 ]'
"$bin" export --db "$tmp/a.db" --dataset "$tmp/d2" --format csv 2>/dev/null; rc=$?
check "--dataset with --format: exit 2, nothing created" '[ $rc -eq 2 ] && [ ! -e "$tmp/d2" ]'
"$bin" export --db "$tmp/a.db" --licence MIT >/dev/null 2>&1; rc=$?
check "--licence without --dataset: exit 2" '[ $rc -eq 2 ]'

[ $fail -eq 0 ] && echo "test_export_formats: all checks pass"
exit $fail
