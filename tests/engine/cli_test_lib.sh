# cli_test_lib.sh — helpers sourced by the engine's CLI script tests (not a test itself).
# Sets bin (the ecocompute binary), models (the real test data of tests/data/models) and fail.
bin=${EC_BINARY:?}
models=${EC_TEST_DATA:?}/models
[ -r "$models/stories260K.bin" ] || { echo "FAIL: test data $models/stories260K.bin not readable"; exit 1; }
fail=0
# check DESCRIPTION EXPR: records a failure when EXPR (evaluated) is false.
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
# holds EXPR: a floating-point relation, evaluated by awk.
holds() { awk "BEGIN { exit !($1) }"; }
# field JSON PRECISION KEY: the value of KEY in the row of PRECISION of a JSON table.
field() { printf "%s" "$1" | jq -r --arg p "$2" ".[] | select(.precision == \$p) | .$3"; }
# usage_error CMD DESCRIPTION ARGS...: `ecocompute CMD ARGS` must exit 2 with one stderr line.
usage_error() {
  local cmd=$1 what=$2; shift 2
  err=$("$bin" "$cmd" "$@" 2>&1 >/dev/null); rc=$?
  check "$cmd $what exits 2" '[ $rc -eq 2 ]'
  check "$cmd $what: one line" '[ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ]'
}
# finish NAME: prints the verdict and exits with it.
finish() { [ $fail -eq 0 ] && echo "$1: all checks pass"; exit $fail; }
