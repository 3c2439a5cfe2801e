#!/usr/bin/env bash
# report-screenshots.sh — regenerates the report artefacts the docs show: the dashboard of the
# published results (docs/results/dashboard.html, from every export in docs/results, each
# configuration at the newest commit that measured it; the Markdown form is `ecocompute report
# docs/results --latest --format md`, not kept: it repeats the page) and
# a PNG of each of its views (docs/images/report/VIEW.png, 1366 px wide, the first 900 px: a
# laptop screen). The published sweeps store no accuracy and exports carry no traces, so the
# energy × accuracy view is taken from the planted fixture (tests/data/report) and the power-traces
# view from a small CPU sweep with a stored trace (CPU engine, fake NVML). Needs a build with the fake NVML
# library (the default test build), chromium and node (scripts/install-deps.sh).
# usage: scripts/report-screenshots.sh [BUILD_DIR]   (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bin=$build/ecocompute
fake=$build/tests/meter/libfake_nvml.so
chromium=${CHROMIUM:-$(command -v chromium || command -v chromium-browser)}
[ -x "$bin" ] && [ -r "$fake" ] || { echo "build first: cmake --build $build" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shots=docs/images/report
mkdir -p "$shots"

title="ecocompute: published results (docs/results)"
# --latest: a configuration that a later study measured again shows that study's runs, not a
# pool of two versions of the code.
"$bin" report docs/results --latest -o docs/results/dashboard.html --title "$title"
node tests/report/browser_check.mjs --chromium "$chromium" --out "$tmp" --name published \
  --max-height 900 docs/results/dashboard.html

ECOCOMPUTE_NVML_LIBRARY=$fake FAKE_NVML="gpus=1 power=150" XDG_DATA_HOME=$tmp/xdg \
  "$bin" bench --model tiny --device cpu --gen 64 --prompt-len 64 --warmup 1 --idle 1 \
  --stabilize 0 --precision fp16,int8 --batch 1,4 --runs 3 --db "$tmp/cpu.db" \
  --trace "$tmp/trace.csv" >/dev/null 2>&1
"$bin" report --db "$tmp/cpu.db" -o "$tmp/cpu.html" --title "CPU sweep with a power trace"
node tests/report/browser_check.mjs --chromium "$chromium" --out "$tmp" --name cpu \
  --max-height 900 --views traces "$tmp/cpu.html"

"$bin" report tests/data/report/fixture-sweep.csv -o "$tmp/fixture.html" \
  --title "Planted fixture (tests/data/report)"
node tests/report/browser_check.mjs --chromium "$chromium" --out "$tmp" --name fixture \
  --max-height 900 --views accuracy "$tmp/fixture.html"

for v in overview precisions batch crossover compare runs; do
  cp "$tmp/published-$v.png" "$shots/$v.png"
done
cp "$tmp/cpu-traces.png" "$shots/traces.png"
cp "$tmp/fixture-accuracy.png" "$shots/accuracy.png"
ls -l docs/results/dashboard.* "$shots"
