#!/usr/bin/env bash
# device-deps.sh — run HERE (the development machine) before bench/arch-check.sh: packs what
# configuring and building ecocompute takes from the Debian build dependencies — headers,
# pkg-config files, the shared libraries to link and then load, and pkgconf itself — from this
# machine's installed packages into .devdeps/deps.tar.xz (git-ignored; carry `.devdeps`). The
# GPU machine has CMake, ninja, nvcc and a C compiler but no -dev packages and no network; with
# this it builds the project for any CUDA architecture list (bench/arch-check.sh unpacks it under
# /tmp/ec-deps). Optional dependencies (SentencePiece, libmicrohttpd) stay behind: the build
# there goes without tokenizer.model files and the exporter's HTTP server.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
pkgs=(libsqlite3-dev libcjson-dev libcmocka-dev libpcre2-dev libicu-dev zlib1g-dev pkgconf-bin
      libpkgconf3)
list=$(mktemp)
trap 'rm -f "$list"' EXIT
for p in "${pkgs[@]}"; do
  dpkg -L "$p"
done | grep -E '^/usr/(include/|lib/x86_64-linux-gnu/|bin/pkgconf$)' | grep -v -E '\.a$' |
  # ICU: the common library (icu-uc) alone; the others are 10 MB the build never links.
  grep -v -E '/libicu(i18n|io|test|tu)\.so' |
  while IFS= read -r f; do
    [ -d "$f" ] && continue
    echo "${f#/}"
    # A development link libX.so points at the runtime library of another package: take
    # libX.so.* beside it (the soname link and the file).
    case "$f" in
    *.so) for r in "$f".*; do [ -e "$r" ] && echo "${r#/}"; done ;;
    esac
  done | sort -u >"$list"
rm -rf .devdeps
mkdir -p .devdeps
tar -C / -cJf .devdeps/deps.tar.xz -T "$list"
du -sh .devdeps >&2
