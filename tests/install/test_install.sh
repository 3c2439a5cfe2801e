#!/usr/bin/env bash
# test_install.sh: `cmake --install` puts the program, library, headers, pkg-config file, bash
# completion and man pages under a fresh prefix, and each of them works from there.
set -euo pipefail
prefix=$(mktemp -d); trap 'rm -rf "$prefix"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cmake --install "$EC_BUILD_DIR" --prefix "$prefix" >/dev/null
[ -x "$prefix/bin/ecocompute" ] || fail "no bin/ecocompute"
ls "$prefix"/lib*/libecocompute.* >/dev/null || fail "no library"
[ -f "$prefix/include/ecocompute/meter.h" ] || fail "no public headers"
pc=$(ls "$prefix"/lib*/pkgconfig/ecocompute.pc) || fail "no ecocompute.pc"
grep -q "^Libs: .*-lecocompute" "$pc" || fail "ecocompute.pc lacks -lecocompute"
# The man pages come from each command's --help: one per subcommand, with NAME and the usage line.
man1=$prefix/share/man/man1
[ -f "$man1/ecocompute.1" ] || fail "no ecocompute.1"
grep -q '^\.SH NAME' "$man1/ecocompute-meter.1" || fail "ecocompute-meter.1 has no NAME"
grep -q 'usage: ecocompute meter' "$man1/ecocompute-meter.1" || fail "ecocompute-meter.1 lacks the usage"
# Completion: subcommands at position 1, the subcommand's flags after it.
comp=$prefix/share/bash-completion/completions/ecocompute
out=$(PATH="$prefix/bin:$PATH" bash -c "source '$comp'; COMP_WORDS=(ecocompute mete); COMP_CWORD=1; _ecocompute; echo \"\${COMPREPLY[*]}\"")
[ "$out" = meter ] || fail "completion of 'mete' gave '$out'"
out=$(PATH="$prefix/bin:$PATH" bash -c "source '$comp'; COMP_WORDS=(ecocompute meter --idl); COMP_CWORD=2; _ecocompute; echo \"\${COMPREPLY[*]}\"")
[ "$out" = --idle ] || fail "completion of 'meter --idl' gave '$out'"
"$prefix/bin/ecocompute" version --format json | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["version"] and j["commit"]' \
  || fail "installed binary: version --format json"
[ "$("$prefix/bin/ecocompute" version --format csv | head -1 | tr -d "\r")" = version,commit ] || fail "version --format csv header"
# examples/measure_window.c builds against the installed library with pkg-config alone, and
# measures: with the fake NVML a GPU window in joules, without a driver "no GPU" and still time.
export PKG_CONFIG_PATH=$(dirname "$pc")
# shellcheck disable=SC2086
"${EC_CC:-cc}" -o "$prefix/measure_window" "$EC_SOURCE_DIR/examples/measure_window.c" \
  $(pkg-config --cflags --libs ecocompute) -lm ${EC_EXAMPLE_LINK_FLAGS:-} 2>"$prefix/cc.err" || fail "example: $(head -c 400 "$prefix/cc.err")"
out=$(ECOCOMPUTE_NVML_LIBRARY=$FAKE_NVML_LIBRARY FAKE_NVML="gpus=1 power=150" "$prefix/measure_window" 0.3) \
  || fail "example with the fake NVML: exit $?"
echo "$out" | grep -Eq "^GPU energy: [0-9.]+ J gross \(counter\), 1[45][0-9]\.[0-9] W average" \
  || fail "example with the fake NVML printed: $out"
echo "$out" | grep -q "^CPU energy: " || fail "example: no CPU energy line: $out"
out=$(ECOCOMPUTE_NVML_LIBRARY=$prefix/no-such-libnvml.so "$prefix/measure_window" 0.1) \
  || fail "example without a driver: exit $?"
echo "$out" | grep -q "^no GPU: " || fail "example without a driver printed: $out"
echo "$out" | grep -q "^window 'work': 0\.[0-9]* s" || fail "example without a driver: no window: $out"
echo "PASS test_install"
