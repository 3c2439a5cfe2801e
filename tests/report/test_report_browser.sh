#!/usr/bin/env bash
# test_report_browser.sh — `ecocompute report` in a real browser (Debian's chromium, headless,
# driven by tests/report/browser_check.mjs over the DevTools pipe). Loads the reports of (a) a
# small CPU sweep measured now (CPU engine, fake NVML, with a stored power trace), (b) a
# published docs/results export (copied into tests/data/report), (c) an empty database, and
# (d) the fixture sweep with accuracy; fails on any console error, network request, or view that
# renders nothing. Screenshots of every view land in $EC_BUILD_DIR/test-artifacts/report/.
# Skips (77) only when chromium or node cannot be found (scripts/install-deps.sh installs
# chromium; CI runs it).
set -u
bin=${EC_BINARY:?}
here=$(cd "$(dirname "$0")" && pwd)
data=$here/../data/report
chromium=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$chromium" ] || ! command -v node >/dev/null; then
  echo "skipping: chromium or node not found (scripts/install-deps.sh installs them)"
  exit 77
fi
art=${EC_BUILD_DIR:-.}/test-artifacts/report
mkdir -p "$art"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
# Screenshots of the first 1600 px of each view: enough to see it, and quick to take.
browse() {
  node "$here/browser_check.mjs" --chromium "$chromium" --out "$art" --name "$1" --max-height 1600 "$2"
}

# (a) a small CPU sweep with a power trace (fake NVML: one GPU at a scripted power).
export ECOCOMPUTE_NVML_LIBRARY=${FAKE_NVML_LIBRARY:?} FAKE_NVML="gpus=1 power=150" \
  XDG_DATA_HOME=$tmp/xdg
"$bin" bench --model tiny --device cpu --gen 8 --prompt-len 8 --warmup 0 --idle 0.3 \
  --stabilize 0 --precision fp16,int8 --batch 1,2,4 --runs 3 --db "$tmp/cpu.db" \
  --trace "$tmp/trace.csv" >/dev/null 2>"$tmp/bench.err"; rc=$?
check "CPU sweep exits 0 (got $rc: $(tail -1 "$tmp/bench.err"))" '[ $rc -eq 0 ]'
"$bin" report --db "$tmp/cpu.db" -o "$tmp/cpu.html" --title "CPU sweep" 2>"$tmp/r.err"; rc=$?
check "CPU report exits 0" '[ $rc -eq 0 ]'
check "CPU report has its power trace" 'grep -q "1 power trace" "$tmp/r.err"'
check "cpu sweep in the browser" 'browse cpu-sweep "$tmp/cpu.html"'

# (b) a published export.
"$bin" report "$data/h100-packed-b1-b8.csv" -o "$tmp/pub.html" 2>/dev/null
check "published export in the browser" 'browse published "$tmp/pub.html"'

# (c) an empty database.
head -1 "$data/fixture-sweep.csv" >"$tmp/header.csv"
"$bin" import --db "$tmp/empty.db" "$tmp/header.csv" >/dev/null 2>&1
"$bin" report --db "$tmp/empty.db" -o "$tmp/empty.html" 2>/dev/null
check "empty database in the browser" 'browse empty "$tmp/empty.html"'

# (d) the fixture with accuracy, reference and fused kernels, three sizes.
"$bin" report "$data/fixture-sweep.csv" -o "$tmp/fixture.html" 2>/dev/null
check "fixture in the browser" 'browse fixture "$tmp/fixture.html"'

# A page that breaks must fail the check: a script error and a network request (its CSP
# removed, else the browser refuses the load before any request) are caught.
sed -e 's|</body>|<script>undefinedFunction()</script><img src="http://127.0.0.1:9/x.png"></body>|' -e '/Content-Security-Policy/d' \
  "$tmp/fixture.html" >"$tmp/broken.html"
node "$here/browser_check.mjs" --chromium "$chromium" --out "$tmp" --name broken \
  "$tmp/broken.html" >"$tmp/broken.out" 2>&1; rc=$?
check "a broken page fails the check" '[ $rc -eq 1 ]'
check "the exception is reported" 'grep -q "uncaught exception" "$tmp/broken.out"'
check "the network request is reported" 'grep -q "network request: http://127.0.0.1:9/x.png" "$tmp/broken.out"'
check "screenshots saved" '[ "$(ls "$art"/*.png | wc -l)" -ge 32 ]'

[ $fail -eq 0 ] && echo "test_report_browser: all checks pass (screenshots in $art)"
exit $fail
