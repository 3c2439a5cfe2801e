#!/usr/bin/env bash
# install-deps.sh — installs the Debian packages ecocompute builds and tests with.
# Idempotent: does nothing when everything is already installed. CUDA (nvcc) is optional and not
# installed here: the CUDA backend is built when nvcc is found (see README).
set -euo pipefail
# python3 and jq: the end-to-end tests read JSON and SQLite with them; sqlite3: the CLI that loads
# `export --format sql` (its test); libclang-rt-dev: clang's
# sanitizer and fuzzer runtimes; libmicrohttpd-dev: the exporter's HTTP server; curl: its tests;
# chromium and nodejs: the report's browser test (tests/report/test_report_browser.sh) and
# scripts/report-screenshots.sh drive headless chromium through its DevTools pipe from node.
# libpcre2-dev, libicu-dev, zlib1g-dev: tokenizer.json (Unicode regex classes, normalization
# forms, .json.gz); libsentencepiece-dev: tokenizer.model (optional in the build, installed here
# so the tests cover it).
pkgs=(build-essential cmake pkg-config git libsqlite3-dev libcjson-dev libcmocka-dev clang
      libclang-rt-dev python3 jq sqlite3 libmicrohttpd-dev curl chromium nodejs
      libpcre2-dev libicu-dev zlib1g-dev libsentencepiece-dev)
# python3-pip, -setuptools, -wheel: `pip install --no-build-isolation ./python` without PyPI.
pkgs+=(python3-pip python3-setuptools python3-wheel)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
