#!/usr/bin/env bash
# test_cli_conventions.sh — every subcommand follows the CLI contract: --help with examples on
# stdout and exit 0; an unknown flag is a one-line error on stderr and exit 2.
set -u
bin=${EC_BINARY:?}
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }

"$bin" >/dev/null 2>&1; check "no command exits 2" '[ $? -eq 2 ]'
"$bin" nosuchcmd >/dev/null 2>&1; check "unknown command exits 2" '[ $? -eq 2 ]'
out=$("$bin" --help); check "top-level help lists version" '[[ "$out" == *version* ]]'
check "top-level help explains --wide" '[[ "$out" == *--wide* ]]'

cmds=$("$bin" --help | awk '/^commands:/{f=1;next} f && /^  [a-z]/{print $1}')
[ -n "$cmds" ] || { echo "FAIL: no commands listed"; exit 1; }
for c in $cmds; do
  out=$("$bin" "$c" --help); rc=$?
  check "$c --help exits 0" '[ $rc -eq 0 ]'
  check "$c --help shows usage" '[[ "$out" == usage:* ]]'
  check "$c --help has an example" '[[ "$out" == *example* ]]'
  "$bin" "$c" --wide --help >/dev/null 2>&1; rc=$?
  check "$c takes --wide (every command does)" '[ $rc -eq 0 ]'
  err=$("$bin" "$c" --no-such-flag 2>&1 >/dev/null); rc=$?
  check "$c unknown flag exits 2" '[ $rc -eq 2 ]'
  check "$c unknown flag: one line on stderr" '[ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ]'
done
[ $fail -eq 0 ] && echo "cli conventions: all commands pass"
exit $fail
