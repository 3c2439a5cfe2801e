#!/usr/bin/env bash
# test_exporter_cli.sh — `ecocompute exporter` end to end with the fake NVML on a loopback port
# picked by the kernel: scrapes with curl (and promtool when installed), counters monotonic
# across scrapes, a GPU lost mid-run reads up 0, a hung NVML call does not hold a scrape past
# --max-read-ms, SIGTERM shuts down cleanly, textfiles replace only our own files.
set -u
bin=${EC_BINARY:?}
fake=${FAKE_NVML_LIBRARY:?}
command -v curl >/dev/null || { echo "skipping: curl not installed"; exit 77; }
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
export ECOCOMPUTE_NVML_LIBRARY=$fake ECOCOMPUTE_POWERCAP_ROOT=$tmp/no-powercap

# start ARGS...: runs the exporter on 127.0.0.1:0 in the background; sets pid and port.
start() {
  "$bin" exporter --listen 127.0.0.1:0 "$@" 2>"$tmp/err" & pid=$!
  port=
  for _ in $(seq 50); do
    port=$(sed -n 's|.*serving http://127.0.0.1:\([0-9]*\)/metrics|\1|p' "$tmp/err")
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "FAIL: exporter did not start: $(cat "$tmp/err")"; exit 1; }
}
# stop: SIGTERM, then waits (bounded) and sets rc.
stop() {
  kill -TERM "$pid"
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  wait "$pid"; rc=$?; pid=
}
scrape() { curl -s --max-time 5 "http://127.0.0.1:$port${1:-/metrics}"; }
# value FILE METRIC GPU: the sample of METRIC for GPU index GPU.
value() { awk -v m="$2" -v g="gpu=\"$3\"" 'index($0, m "{") == 1 && index($0, g) { print $NF }' "$1"; }

# --- a healthy pair of GPUs, one of which falls off the bus at 1.5 s ---
FAKE_NVML="gpus=2 power=200 gpu1.lost=1.5" start --max-read-ms 500
ta=$(date +%s.%N); scrape >"$tmp/m1"
check "scrape has GPU 0 energy" '[ -n "$(value "$tmp/m1" ecocompute_gpu_energy_joules_total 0)" ]'
check "every family has HELP and TYPE" \
  '[ "$(grep -c "^# HELP " "$tmp/m1")" -eq "$(grep -c "^# TYPE " "$tmp/m1")" ] && [ "$(grep -c "^# TYPE " "$tmp/m1")" -ge 15 ]'
check "both GPUs up" '[ "$(value "$tmp/m1" ecocompute_gpu_up 0)" = 1 ] && [ "$(value "$tmp/m1" ecocompute_gpu_up 1)" = 1 ]'
check "instant power 200 W" '[ "$(value "$tmp/m1" ecocompute_gpu_power_watts 0)" = 200.000 ]'
check "labels carry uuid and name" 'grep -q "uuid=\"GPU-fa4e0000-0000-0000-0000-000000000001\",name=\"Fake H100 1\"" "$tmp/m1"'
check "content type is Prometheus text 0.0.4" \
  'curl -s -o /dev/null -w "%{content_type}" "http://127.0.0.1:$port/metrics" | grep -q "version=0.0.4"'
if command -v promtool >/dev/null; then
  check "promtool check metrics passes" 'promtool check metrics <"$tmp/m1" >"$tmp/promtool" 2>&1'
else
  echo "note: promtool not installed (Debian package prometheus); exposition lint skipped"
fi
check "healthz says ok" '[ "$(scrape /healthz)" = ok ]'
check "unknown path is 404" '[ "$(curl -s -o /dev/null -w "%{http_code}" "http://127.0.0.1:$port/nope")" = 404 ]'
check "POST is refused (405)" '[ "$(curl -s -o /dev/null -w "%{http_code}" -d x "http://127.0.0.1:$port/metrics")" = 405 ]'
sleep 0.5
scrape >"$tmp/m2"; td=$(date +%s.%N)
e1=$(value "$tmp/m1" ecocompute_gpu_energy_joules_total 0); e2=$(value "$tmp/m2" ecocompute_gpu_energy_joules_total 0)
r1=$(awk '/^ecocompute_reads_total /{print $2}' "$tmp/m1"); r2=$(awk '/^ecocompute_reads_total /{print $2}' "$tmp/m2")
check "energy counter grows between scrapes ($e1 -> $e2 J)" 'awk "BEGIN { exit !($e2 > $e1) }"'
# The two readings lie within [ta, td]: at 200 W the counter cannot have grown by more.
check "energy grows by at most 200 W x the time between scrapes" 'awk "BEGIN { exit !(($e2 - $e1) <= 200 * ($td - $ta) + 0.01) }"'
check "reads_total grows ($r1 -> $r2)" '[ "$r2" -gt "$r1" ]'
sleep 1.2
scrape >"$tmp/m3"
check "lost GPU reads up 0" '[ "$(value "$tmp/m3" ecocompute_gpu_up 1)" = 0 ]'
check "lost GPU has no other samples" '[ "$(grep -v "^ecocompute_gpu_up" "$tmp/m3" | grep -c "gpu=\"1\"")" -eq 0 ]'
check "healthy GPU still up" '[ "$(value "$tmp/m3" ecocompute_gpu_up 0)" = 1 ]'
e3=$(value "$tmp/m3" ecocompute_gpu_energy_joules_total 0)
check "counter still monotonic after the loss" 'awk "BEGIN { exit !($e3 > $e2) }"'
stop
check "SIGTERM: exit 0 (got $rc)" '[ $rc -eq 0 ]'
check "SIGTERM: says it shuts down" 'grep -q "shutting down" "$tmp/err"'

# --- a GPU whose energy counter read hangs 3 s from t = 1 s on: scrapes stay bounded ---
FAKE_NVML="gpus=1 power=150 slow=3000 slow_from=1" start --max-read-ms 200
sleep 1.5
t0=$(date +%s.%N); scrape >"$tmp/slow"; t1=$(date +%s.%N)
check "slow NVML: scrape answered within 1 s" 'awk "BEGIN { exit !($t1 - $t0 < 1.0) }"'
check "slow NVML: last readings still served" '[ -n "$(value "$tmp/slow" ecocompute_gpu_energy_joules_total 0)" ]'
check "slow NVML: scrape waited ~max-read-ms" \
  'awk "/^ecocompute_scrape_duration_seconds /{ exit !(\$2 >= 0.15 && \$2 < 0.5) }" "$tmp/slow"'
stop
check "slow NVML: SIGTERM still exits 0" '[ $rc -eq 0 ]'

# --- --duration ends by itself; a port in use is one clear error ---
FAKE_NVML="gpus=1" start --duration 1
busy=$port
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
wait "$pid"; rc=$?; pid=
check "--duration 1 exits 0 by itself" '[ $rc -eq 0 ]'
sleep 0.2
python3 -c 'import socket,time,sys; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(5)' >"$tmp/port" &
holder=$!
for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
err=$(FAKE_NVML="gpus=1" "$bin" exporter --listen "127.0.0.1:$(cat "$tmp/port")" --duration 1 2>&1 >/dev/null); rc=$?
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
check "port in use: exit 1 (got $rc)" '[ $rc -eq 1 ]'
check "port in use: one line naming it" '[ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ] && [[ "$err" == *"cannot listen on 127.0.0.1:"* ]]'
err=$("$bin" exporter --listen localhost 2>&1 >/dev/null); rc=$?
check "--listen without a port: usage error (got $rc)" '[ $rc -eq 2 ]'

# --- one exposition on stdout; no driver: CPU metrics only ---
FAKE_NVML="gpus=3 power=100" "$bin" exporter --once >"$tmp/once" 2>/dev/null
check "--once prints three GPUs" '[ "$(grep -c "^ecocompute_gpu_up{" "$tmp/once")" -eq 3 ]'
FAKE_NVML="init=fail" "$bin" exporter --once >"$tmp/none" 2>"$tmp/none.err"; rc=$?
check "no driver: exit 0 with ecocompute_gpus 0" '[ $rc -eq 0 ] && grep -q "^ecocompute_gpus 0$" "$tmp/none"'
check "no driver: says why on stderr" 'grep -q "no GPUs" "$tmp/none.err"'

# --- RAPL: a fake powercap tree (package + dram); counters from 0 at start, growing ---
pc=$tmp/pc
mkdir -p "$pc/intel-rapl:0" "$pc/intel-rapl:0:1"
echo package-0 >"$pc/intel-rapl:0/name"; echo dram >"$pc/intel-rapl:0:1/name"
for z in "intel-rapl:0" "intel-rapl:0:1"; do
  echo 1000000 >"$pc/$z/energy_uj"; echo 262143328850 >"$pc/$z/max_energy_range_uj"
done
ECOCOMPUTE_POWERCAP_ROOT=$pc FAKE_NVML="gpus=1" start
scrape >"$tmp/r1"
echo 6000000 >"$pc/intel-rapl:0/energy_uj"; echo 3000000 >"$pc/intel-rapl:0:1/energy_uj"
sleep 0.2
scrape >"$tmp/r2"
stop
check "RAPL readable: cpu_energy_up 1" 'grep -q "^ecocompute_cpu_energy_up 1$" "$tmp/r1"'
check "RAPL package counter starts at 0 J" 'grep -q "^ecocompute_cpu_package_energy_joules_total 0.000$" "$tmp/r1"'
check "RAPL package +5 J, dram +2 J" \
  'grep -q "^ecocompute_cpu_package_energy_joules_total 5.000$" "$tmp/r2" && grep -q "^ecocompute_cpu_dram_energy_joules_total 2.000$" "$tmp/r2"'
check "no RAPL: cpu_energy_up 0, no CPU counters" \
  'grep -q "^ecocompute_cpu_energy_up 0$" "$tmp/m1" && ! grep -q "cpu_package_energy" "$tmp/m1"'

# --- textfiles ---
export FAKE_NVML="gpus=1 power=100"
"$bin" exporter --textfile "$tmp/eco.prom" --once 2>/dev/null; rc=$?
check "textfile written (exit $rc)" '[ $rc -eq 0 ] && head -1 "$tmp/eco.prom" | grep -q "^# ecocompute exporter textfile"'
check "textfile holds the exposition" 'grep -q "^ecocompute_gpu_energy_joules_total{" "$tmp/eco.prom"'
"$bin" exporter --textfile "$tmp/eco.prom" --once 2>/dev/null
check "our textfile is replaced" '[ $? -eq 0 ]'
check "no temporary files left" '[ "$(ls "$tmp" | grep -c "\.tmp$")" -eq 0 ]'
echo "node_custom 1" >"$tmp/theirs.prom"
err=$("$bin" exporter --textfile "$tmp/theirs.prom" --once 2>&1 >/dev/null); rc=$?
check "foreign file: exit 1 (got $rc)" '[ $rc -eq 1 ]'
check "foreign file left untouched" '[ "$(cat "$tmp/theirs.prom")" = "node_custom 1" ]'
check "foreign file: one line" '[ "$(printf "%s\n" "$err" | wc -l)" -eq 1 ]'
err=$("$bin" exporter --textfile "$tmp/eco.txt" --once 2>&1 >/dev/null); rc=$?
check "textfile not *.prom: usage error" '[ $rc -eq 2 ]'
"$bin" exporter --textfile "$tmp/loop.prom" --interval 0.2 --duration 0.7 2>/dev/null; rc=$?
check "textfile loop ends with --duration, exit 0" '[ $rc -eq 0 ] && [ -s "$tmp/loop.prom" ]'
err=$("$bin" exporter --interval 0 2>&1 >/dev/null); rc=$?
check "--interval 0: usage error" '[ $rc -eq 2 ]'

[ $fail -eq 0 ] && echo "exporter: all checks pass"
exit $fail
