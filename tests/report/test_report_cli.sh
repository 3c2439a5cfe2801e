#!/usr/bin/env bash
# test_report_cli.sh — `ecocompute report` end to end without a browser: the HTML of the fixture
# sweep carries its marker, eight views and every number the views promise (the fixture's planted
# Δ, crossover and scaling law), nothing that would reach a network; Markdown holds the same
# content; the views of an empty database say why they are empty; output files are written only
# when new, a previous report, or a plain file with --force (never an input or a database); bad
# input gets one clear line and exit 1; usage errors exit 2.
set -u
bin=${EC_BINARY:?}
data=$(cd "$(dirname "$0")/../data/report" && pwd)
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

# --help: usage with examples on stdout, exit 0.
out=$("$bin" report --help); rc=$?
check "--help exits 0" '[ $rc -eq 0 ]'
check "--help has examples" '[[ "$out" == *"examples:"*"ecocompute report --db"* ]]'

# The fixture sweep (tests/data/report/README.md): three model sizes, fp16/int8/nf4, reference
# and fused kernels, batch 1/8/32, perplexity at batch 1.
"$bin" report "$data/fixture-sweep.csv" -o fx.html --title "Fixture <sweep>" 2>err.txt; rc=$?
check "report exits 0 (got $rc: $(cat err.txt))" '[ $rc -eq 0 ]'
check "closing line names runs and file" 'grep -q "162 runs from 1 files, 0 power traces: fx.html" err.txt'
check "generator marker in the head" 'head -c 600 fx.html | grep -q "<meta name=\"generator\" content=\"ecocompute report "'
check "eight views" '[ "$(grep -o "<section class=\"view\"" fx.html | wc -l)" -eq 8 ]'
check "title escaped" 'grep -q "<title>Fixture &lt;sweep&gt;</title>" fx.html'
# No request can leave the page: no external URL but the SVG namespace, no src=/href= to files.
check "no URL but the SVG namespace" '! grep -o "https\?://[^\" ]*" fx.html | grep -v "^http://www.w3.org/2000/svg$" | grep -q .'
check "no src attributes" '! grep -q " src=" fx.html'
check "only in-page links" '! grep -o "href=\"[^\"]*\"" fx.html | grep -qv "href=\"#"'
check "CSP forbids any load" 'grep -q "default-src '"'"'none'"'"'" fx.html'
# Numbers: reference int8 on the 1.1B model costs +39 % vs fp16 (0.9·(1 + 0.6/1.1) − 1); the
# batch law's exponent is the planted 0.85; reference nf4 crosses zero at 2.28 B (the line in
# ln size through the planted 0.75·(1 + 0.6/N) − 1 at 1.1, 3 and 7 B).
check "Δ int8 reference 1.1B = +39.1 %" 'grep -q "data-v=\"39.0909\"" fx.html'
check "a crossover in range" 'grep -q "crossover in range" fx.html'
check "scaling exponent b = 0.85" 'grep -q "<td class=\"num\" data-v=\"0.85\">0.85</td>" fx.html'
check "gross and net stated" 'grep -q "J/1k net" fx.html && grep -q "energy gross" fx.html'
check "a failed gate is marked" 'grep -q "class=\"gate-fail\">fail" fx.html'
check "accuracy drawn" 'grep -q "Δ perplexity vs fp16" fx.html'
check "traces: why empty" 'grep -q "export files carry no traces" fx.html'
check "provenance one click away" '[ "$(grep -c "<details class=\"prov\">" fx.html)" -ge 6 ]'
check "charts carry titles" '[ "$(grep -o "<svg role=\"img\"[^>]*><title>" fx.html | wc -l)" -ge 10 ]'

# Markdown: same content, first line the marker, ASCII bars.
"$bin" report "$data/fixture-sweep.csv" --format md -o fx.md 2>/dev/null; rc=$?
check "md exits 0" '[ $rc -eq 0 ]'
check "md marker on line 1" 'head -1 fx.md | grep -q "^<!-- generator: ecocompute report "'
for h in Overview Precisions "Batch size" Crossover "Energy × accuracy" "Power traces" Compare Runs Provenance; do
  check "md has ## $h" 'grep -q "^## $h$" fx.md'
done
check "md ASCII bars" 'grep -q "\`#\{5,\}\.*\` |" fx.md'
check "md Δ +39.1 with its Welch CI" 'grep -q "| int8 | reference | 3 | .* | 39.1 \\[35.8 – 42.4\\] |" fx.md'
check "md fit line" 'grep -q "b = 0.850" fx.md'
check "md crossover nf4 reference 2.28 B" 'grep -q "| reference | 1 | nf4 | 1.10 – 7.00 | -18.9 | 2.28 |" fx.md'
check "md no HTML tags in why-empty" '! grep -q "<code>" fx.md'

# The published results (docs/results, copied into tests/data/report).
"$bin" report "$data/h100-packed-b1-b8.csv" -o pub.html 2>/dev/null; rc=$?
check "published export exits 0" '[ $rc -eq 0 ]'
check "published: H100 named" 'grep -q "NVIDIA H100 80GB HBM3" pub.html'
check "published: a one-run configuration's CI is one dash, not a range of dashes" \
  'grep -q "<td>–</td>" pub.html && ! grep -q "<td>– – –</td>" pub.html'

# An empty database: every view says why it is empty.
head -1 "$data/fixture-sweep.csv" >header.csv
"$bin" import --db empty.db header.csv >/dev/null 2>&1
"$bin" report --db empty.db -o empty.html 2>/dev/null; rc=$?
check "empty db exits 0" '[ $rc -eq 0 ]'
check "empty db: eight why-empty boxes" '[ "$(grep -c "<p class=\"empty\"" empty.html)" -ge 8 ]'
check "empty db: no runs JSON" '! grep -q "id=\"ec-runs\"" empty.html'

# Output files. A previous report is replaced; anything else needs --force; never an input or a
# database, not even with --force.
"$bin" report "$data/fixture-sweep.csv" -o fx.html 2>/dev/null; rc=$?
check "previous report replaced" '[ $rc -eq 0 ]'
"$bin" report "$data/fixture-sweep.csv" --format md -o fx.md 2>/dev/null; rc=$?
check "previous md report replaced" '[ $rc -eq 0 ]'
echo "my notes" >notes.html
err=$("$bin" report "$data/fixture-sweep.csv" -o notes.html 2>&1); rc=$?
check "foreign file refused (exit 1)" '[ $rc -eq 1 ]'
check "foreign file: one line naming it" '[[ "$err" == "ecocompute report: notes.html exists and is not a previous report"* ]] && [ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ]'
check "foreign file untouched" '[ "$(cat notes.html)" = "my notes" ]'
"$bin" report "$data/fixture-sweep.csv" -o notes.html --force 2>/dev/null; rc=$?
check "--force replaces a plain file" '[ $rc -eq 0 ] && head -c 300 notes.html | grep -q generator'
cp empty.db copy.db
err=$("$bin" report "$data/fixture-sweep.csv" -o copy.db --force 2>&1); rc=$?
check "a database is never written over" '[ $rc -eq 1 ] && [[ "$err" == *"is a database"* ]] && cmp -s empty.db copy.db'
cp "$data/fixture-sweep.csv" in.csv
err=$("$bin" report in.csv -o in.csv --force 2>&1); rc=$?
check "an input is never written over" '[ $rc -eq 1 ] && [[ "$err" == *"one of the inputs"* ]] && cmp -s in.csv "$data/fixture-sweep.csv"'
mkdir adir
err=$("$bin" report "$data/fixture-sweep.csv" -o adir 2>&1); rc=$?
check "a folder is refused" '[ $rc -eq 1 ] && [[ "$err" == *"not a regular file"* ]]'
check "no temporary files left" '[ -z "$(ls | grep "\.tmp\.")" ]'
out=$("$bin" report "$data/fixture-sweep.csv" --format md -o - 2>/dev/null | head -1)
check "-o - writes stdout" '[[ "$out" == "<!-- generator: ecocompute report "* ]]'
(cd adir && "$bin" report "$data/fixture-sweep.csv" 2>/dev/null)
check "default output report.html" '[ -s adir/report.html ]'

# Bad input: the same one-line errors as analyze, exit 1, nothing written.
printf 'not,a,dataset\n1,2,3\n' >junk.csv
err=$("$bin" report junk.csv -o junk.html 2>&1); rc=$?
check "junk file exits 1" '[ $rc -eq 1 ] && [ ! -e junk.html ]'
check "junk file: one line" '[ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ] && [[ "$err" == "ecocompute report: "* ]]'
err=$("$bin" report --db missing.db -o m.html 2>&1); rc=$?
check "missing db exits 1" '[ $rc -eq 1 ] && [ ! -e m.html ]'
head -c 3000 /dev/urandom >damaged.db
err=$("$bin" report --db damaged.db -o d.html 2>&1); rc=$?
check "damaged db exits 1, one line" '[ $rc -eq 1 ] && [ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ] && [ ! -e d.html ]'

# Usage errors: exit 2, one line.
for args in "" "--format pdf x.csv" "-o" "--db a.db x.csv" "--bogus x.csv" "--title"; do
  # shellcheck disable=SC2086
  err=$("$bin" report $args 2>&1 >/dev/null); rc=$?
  check "usage error '$args' exits 2" '[ $rc -eq 2 ] && [ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ]'
done

[ $fail -eq 0 ] && echo "test_report_cli: all checks pass"
exit $fail
