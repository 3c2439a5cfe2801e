#!/usr/bin/env bash
# test_data_safety.sh — no command loses or doubles a result, hangs, or writes over a file it did
# not create: outputs over a database or a foreign file, concurrent sweeps and first uses of one
# database, FIFOs where files are expected, out-of-range values in files, non-finite logits,
# --resume with a redefined sweep, databases in read-only directories, and GGUF files. Uses the
# CPU engine, the `tiny` catalog model and the fake NVML.
set -u
bin=${EC_BINARY:?}
fake=${FAKE_NVML_LIBRARY:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
runs_in() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from runs').fetchone()[0])" "$1"; }
export ECOCOMPUTE_NVML_LIBRARY=$fake FAKE_NVML="gpus=1 power=150" XDG_DATA_HOME=$tmp/xdg
quick=(--model tiny --gen 8 --prompt-len 8 --warmup 0 --idle 0 --stabilize 0)

"$bin" bench "${quick[@]}" --runs 2 --db "$tmp/a.db" >/dev/null 2>&1
"$bin" export --db "$tmp/a.db" -o "$tmp/a.csv" 2>/dev/null
sum_db=$(md5sum <"$tmp/a.db")

# 1. export -o onto the database itself, or onto a file that is not an export.
"$bin" export --db "$tmp/a.db" -o "$tmp/a.db" 2>"$tmp/err"; rc=$?
check "export -o DB: exit 2" '[ $rc -eq 2 ] && grep -q "is a database" "$tmp/err"'
"$bin" export --db "$tmp/a.db" -o "$tmp/a.db" --force 2>/dev/null; rc=$?
check "export -o DB --force: still exit 2" '[ $rc -eq 2 ]'
check "export -o DB: database untouched" '[ "$(md5sum <"$tmp/a.db")" = "$sum_db" ]'
echo "my notes" >"$tmp/notes.txt"
"$bin" export --db "$tmp/a.db" -o "$tmp/notes.txt" 2>/dev/null; rc=$?
check "export -o notes: exit 2, kept" '[ $rc -eq 2 ] && [ "$(cat "$tmp/notes.txt")" = "my notes" ]'
"$bin" export --db "$tmp/a.db" -o "$tmp/notes.txt" --force 2>/dev/null; rc=$?
check "export -o notes --force: replaced" '[ $rc -eq 0 ] && head -1 "$tmp/notes.txt" | grep -q "^source,"'
cp "$tmp/a.csv" "$tmp/a2.csv"
"$bin" export --db "$tmp/a.db" --format json -o "$tmp/a2.csv" 2>/dev/null; rc=$?
check "export over an earlier export: allowed" '[ $rc -eq 0 ]'

# 2. --trace onto a database or a foreign file; an earlier trace may be replaced.
"$bin" bench "${quick[@]}" --runs 2 --trace "$tmp/a.db" --db "$tmp/b.db" >/dev/null 2>"$tmp/err"; rc=$?
check "bench --trace DB: refused" '[ $rc -ne 0 ] && grep -q "is a database" "$tmp/err"'
check "bench --trace DB: untouched" '[ "$(md5sum <"$tmp/a.db")" = "$sum_db" ]'
echo "my notes" >"$tmp/notes2.txt"
"$bin" meter --trace "$tmp/notes2.txt" -- true >/dev/null 2>&1; rc=$?
check "meter --trace notes: refused, kept" '[ $rc -ne 0 ] && [ "$(cat "$tmp/notes2.txt")" = "my notes" ]'
"$bin" meter --trace "$tmp/t.csv" -- true >/dev/null 2>&1
"$bin" meter --trace "$tmp/t.csv" -- true >/dev/null 2>&1; rc=$?
check "meter --trace over an earlier trace: allowed" '[ $rc -eq 0 ]'

# 3. Two identical sweeps at once on one database split the work: nothing stored twice (no
# quality-gate re-runs, so every stored run is one of the 4 x 3 planned).
sweep=("${quick[@]}" --precision fp16,int8 --batch 1,2 --runs 3 --reruns 0)
for rep in 1 2 3 4 5; do
  db=$tmp/twice$rep.db
  "$bin" bench "${sweep[@]}" --db "$db" >/dev/null 2>&1 &
  "$bin" bench "${sweep[@]}" --db "$db" >/dev/null 2>&1 &
  wait
  n=$(runs_in "$db")
  check "two sweeps at once (try $rep): 4 configurations x 3 runs stored once (got $n)" '[ "$n" -eq 12 ]'
done

# 4. The first use of a new database by two processes at once: both succeed.
for rep in $(seq 1 10); do
  db=$tmp/first$rep.db
  "$bin" import --db "$db" "$tmp/a.csv" >/dev/null 2>"$tmp/e1" &
  "$bin" import --db "$db" "$tmp/a.csv" >/dev/null 2>"$tmp/e2" &
  wait
  check "first use by two at once (try $rep): no spurious error" '! grep -q . "$tmp/e1" "$tmp/e2"'
  n=$(runs_in "$db")
  check "first use by two at once (try $rep): runs stored once (got $n)" '[ "$n" -eq 2 ]'
done

# 6. An empty export read by analyze and validate (no undefined behaviour under UBSan).
head -1 "$tmp/a.csv" >"$tmp/empty.csv"
"$bin" analyze "$tmp/empty.csv" >/dev/null 2>&1; rc=$?
check "analyze of an empty export: no crash" '[ $rc -le 2 ]'
"$bin" validate "$tmp/empty.csv" >/dev/null 2>&1; rc=$?
check "validate of an empty export: no crash" '[ $rc -le 2 ]'
# A count no integer can hold, in a seed-format file: refused, naming the field.
printf '{"throughput_tok_s_mean": 50, "energy_per_1k_tokens_j_mean": 900, "precision": "fp16", "batch": 1e300, "max_new_tokens": 256}' >"$tmp/seed.json"
"$bin" import --db "$tmp/c.db" "$tmp/seed.json" >/dev/null 2>"$tmp/err"; rc=$?
check "import batch 1e300: exit 1 naming batch" '[ $rc -eq 1 ] && grep -q "batch: not a whole number" "$tmp/err"'

# 7. FIFOs where files are expected: refused at once, never a hang.
mkfifo "$tmp/fifo"
mkdir "$tmp/hf" && mkfifo "$tmp/hf/config.json"
for args in "run --model $tmp/fifo --device cpu" "run --model $tmp/hf --device cpu" \
            "import --db $tmp/c.db $tmp/fifo" "analyze $tmp/fifo" "validate $tmp/fifo" \
            "bench --config $tmp/fifo --db $tmp/c.db"; do
  # shellcheck disable=SC2086
  timeout 20 "$bin" $args >/dev/null 2>"$tmp/err"; rc=$?
  check "$args: refused, no hang (rc $rc)" '[ $rc -eq 1 ] || [ $rc -eq 2 ]'
  check "$args: says FIFO" 'grep -q "FIFO" "$tmp/err"'
done

# 8. Values no measurement can have are errors naming the record and the field.
python3 - "$tmp/a.csv" "$tmp" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
h = rows[0]
for name, col, value in [("neg", "gpu_energy_j", "-5"), ("zero", "avg_power_w", "0"),
                         ("inf", "tok_s", "inf"), ("batch0", "batch", "0")]:
    r = [list(x) for x in rows]
    r[2][h.index(col)] = value
    csv.writer(open(f"{sys.argv[2]}/{name}.csv", "w", newline="")).writerows(r)
PY
for case in "neg gpu_energy_j" "zero avg_power_w" "inf tok_s" "batch0 batch"; do
  read -r name field <<<"$case"
  "$bin" validate "$tmp/$name.csv" >/dev/null 2>"$tmp/err"; rc=$?
  check "validate $name: exit 1 naming record 2 and $field" '[ $rc -eq 1 ] && grep -q "record 2 .*: $field = " "$tmp/err"'
  "$bin" import --db "$tmp/d.db" "$tmp/$name.csv" >/dev/null 2>"$tmp/err"; rc=$?
  check "import $name: exit 1, nothing stored" '[ $rc -eq 1 ] && { [ ! -e "$tmp/d.db" ] || [ "$(runs_in "$tmp/d.db")" -eq 0 ]; }'
done
# A model whose weights do not fit fp16: its logits are infinite or NaN, and eval says so.
python3 - "$tmp/big.bin" <<'PY'
import struct, sys
dim, hidden, layers, heads, kv, vocab, seq = 8, 16, 1, 2, 2, 32, 16
hd = dim // heads
n = (vocab * dim + layers * (dim + dim * dim + 2 * dim * kv * hd + dim * dim + dim + 3 * dim * hidden)
     + dim + seq * hd)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("7i", dim, hidden, layers, heads, kv, vocab, seq))
    f.write(struct.pack(f"{n}f", *([7e4] * n)))
PY
"$bin" eval --model "$tmp/big.bin" --precision fp16 --tokens 8 --prompt-len 4 --threads 1 \
  >"$tmp/out" 2>"$tmp/err"; rc=$?
check "eval on overflowing fp16 weights: exit 1 (got $rc)" '[ $rc -eq 1 ] && grep -q "logit of token" "$tmp/err"'

# 9. --resume cannot take flags that redefine the sweep.
"$bin" bench --resume --model tiny --db "$tmp/a.db" >/dev/null 2>"$tmp/err"; rc=$?
check "bench --resume --model: exit 2" '[ $rc -eq 2 ] && grep -q "cannot take --model" "$tmp/err"'
"$bin" bench --resume --db "$tmp/a.db" >/dev/null 2>&1; rc=$?
check "bench --resume alone: exit 0" '[ $rc -eq 0 ]'

# 10. A database in a directory this user cannot write is still read.
mkdir "$tmp/ro" && cp "$tmp/a.db" "$tmp/ro/" && chmod 755 "$tmp/ro" && chmod 644 "$tmp/ro/a.db"
chmod 555 "$tmp/ro"
as_user=()
if [ "$(id -u)" -eq 0 ]; then
  # root writes anywhere: read as an ordinary user to see what users see.
  if command -v setpriv >/dev/null; then as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups); fi
fi
if [ "$(id -u)" -ne 0 ] || [ ${#as_user[@]} -gt 0 ]; then
  "${as_user[@]}" "$bin" export --db "$tmp/ro/a.db" >"$tmp/ro.csv" 2>"$tmp/err"; rc=$?
  check "export from a read-only directory (rc $rc: $(head -c 200 "$tmp/err"))" '[ $rc -eq 0 ] && [ "$(wc -l <"$tmp/ro.csv")" -eq 3 ]'
  "${as_user[@]}" "$bin" analyze --db "$tmp/ro/a.db" >/dev/null 2>"$tmp/err"; rc=$?
  check "analyze from a read-only directory (rc $rc)" '[ $rc -eq 0 ]'
  check "nothing created in the read-only directory" '[ "$(ls "$tmp/ro")" = "a.db" ]'
else
  echo "read-only directory: not checked (running as root without setpriv)"
fi
chmod 755 "$tmp/ro"

# 11. A GGUF file is named as such.
printf 'GGUF\003\000\000\000' >"$tmp/m.gguf"; head -c 4096 /dev/zero >>"$tmp/m.gguf"
"$bin" run --model "$tmp/m.gguf" --device cpu >/dev/null 2>"$tmp/err"; rc=$?
check "GGUF: exit 1, named" '[ $rc -eq 1 ] && grep -q "a GGUF file" "$tmp/err"'

[ $fail -eq 0 ] && echo "test_data_safety: all checks pass"
exit $fail
