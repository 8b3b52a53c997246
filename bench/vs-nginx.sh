#!/bin/bash
# bench/vs-nginx.sh — spindle (1 worker) against nginx (1 worker) on the hello
# world, side by side: both servers pinned to CPU 0, wrk (1 thread) pinned to
# CPU 1, short runs alternating the two servers for several rounds, for
# keep-alive and "Connection: close" at 100 connections each.
#
# Reports per server and workload the median requests/s and the median server
# CPU time per request (utime+stime of the server's whole process tree —
# master and worker, from /proc/PID/stat, sampled just before and just after
# each wrk run — divided by the requests wrk completed), and the ratios
# spindle/nginx. Writes a Markdown table and CSVs to bench/results/.
#
# usage: bench/vs-nginx.sh [--smoke] [--duration SEC] [--rounds N] [--connections N]
#   env: DURATION (5), ROUNDS (3), CONNS (100), SMOKE=1 (1 s runs, 1 round),
#        SPINDLE (build/spindle), NGINX, OUT (result file prefix),
#        ACCESS_LOG=1 (both servers write a combined-format access log to a
#        file in the temp dir, as issue 7's benchmark asks)
# Exits non-zero if a run saw a non-2xx response or a socket error.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

bench_args vs-nginx 100 "$@"

[ -x "$SPINDLE" ] || die "$SPINDLE not built (run make)"
command -v wrk >/dev/null || die "wrk not installed (scripts/deps.sh)"
[ -x "$NGINX" ] || die "nginx not installed (scripts/deps.sh)"
[ "$(nproc)" -ge 2 ] || die "needs 2 CPUs (servers on CPU 0, wrk on CPU 1)"
bench_init
TCK=$(getconf CLK_TCK)

# --- servers: both started once, both pinned to CPU 0, idle when not driven.
SP_PORT=$(free_port)
SP_LOG_FLAGS=()
if [ "${ACCESS_LOG:-0}" = 1 ]; then
  SP_LOG_FLAGS=(--access-log "$TMPD/spindle-access.log")
  export NGINX_ACCESS_LOG="$TMPD/nginx-access.log combined"
fi
taskset -c 0 "$SPINDLE" --bind "127.0.0.1:$SP_PORT" --workers 1 --log-level warning "${SP_LOG_FLAGS[@]}" \
  >"$TMPD/spindle.log" 2>&1 &
SP_PID=$!
bench_track "$SP_PID"

NG_PORT=$(free_port)
write_nginx_conf "$TMPD/nginx" "$NG_PORT" on 4096
taskset -c 0 $(nginx_cmd "$TMPD/nginx") >"$TMPD/nginx.log" 2>&1 &
NG_PID=$!
bench_track "$NG_PID"

wait_listen "$SP_PORT" || { cat "$TMPD/spindle.log"; die "spindle did not start"; }
wait_listen "$NG_PORT" || { cat "$TMPD/nginx.log" "$TMPD/nginx/error.log"; die "nginx did not start"; }
sleep 0.3 # let the workers come up
check_hello "$SP_PORT" || die "spindle: GET / is not 200 Hello world!"
check_hello "$NG_PORT" || die "nginx: GET / is not 200 Hello world!"
port_of() { if [ "$1" = spindle ]; then echo "$SP_PORT"; else echo "$NG_PORT"; fi; }
pid_of() { if [ "$1" = spindle ]; then echo "$SP_PID"; else echo "$NG_PID"; fi; }
resp_bytes() { curl -s -m 5 -D - -o /dev/null -H 'Connection: keep-alive' "http://127.0.0.1:$1/" | wc -c; }
SP_HDR=$(resp_bytes "$SP_PORT")
NG_HDR=$(resp_bytes "$NG_PORT")
log "spindle pid $SP_PID port $SP_PORT ($(tree_pids "$SP_PID" | wc -l) processes), nginx pid $NG_PID port $NG_PORT ($(tree_pids "$NG_PID" | wc -l) processes)"
log "duration ${DURATION}s, rounds $ROUNDS, connections $CONNS; $(machine_desc)"

RUNS=$OUT-runs.csv
echo "round,workload,server,duration_s,requests,requests_per_s,cpu_ticks,cpu_us_per_request,non2xx,err_connect,err_read,err_write,err_timeout,cpu0_busy_pct,cpu0_not_server_pct,cpu1_busy_pct,wrk_cpu_us_per_request" >"$RUNS"
FAIL=0

# one_run ROUND WORKLOAD SERVER
one_run() {
  local round=$1 wl=$2 srv=$3 port pid hdr=() t0 t1 out
  port=$(port_of "$srv")
  pid=$(pid_of "$srv")
  [ "$wl" = close ] && hdr=(-H 'Connection: close')
  kill -0 "$pid" 2>/dev/null || die "$srv (pid $pid) died"
  local c0a c0b c1a c1b
  read -r c0a c0b < <(cpu_stat 0)
  read -r c1a c1b < <(cpu_stat 1)
  t0=$(tree_ticks "$pid")
  # wrk runs as a direct child of this shell, between two `times` (the
  # builtin, redirected so it runs here): the second line's growth is wrk's
  # own CPU time.
  times >"$TMPD/times0"
  taskset -c 1 wrk -t1 -c"$CONNS" -d"${DURATION}s" "${hdr[@]}" "http://127.0.0.1:$port/" >"$TMPD/wrk.out" 2>&1
  times >"$TMPD/times1"
  t1=$(tree_ticks "$pid")
  out=$(cat "$TMPD/wrk.out")
  local wrk_s
  wrk_s=$(cat "$TMPD/times0" "$TMPD/times1" | awk 'function sec(x,  m) { m = x; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", x); sub(/s$/, "", x); return m * 60 + x }
    NR == 2 { a = sec($1) + sec($2) } NR == 4 { b = sec($1) + sec($2) } END { printf "%.3f", b - a }')
  local c0c c0d c1c c1d
  read -r c0c c0d < <(cpu_stat 0)
  read -r c1c c1d < <(cpu_stat 1)
  # How busy each CPU was, and CPU 0's busy time not charged to the server
  # (other processes, interrupts): a hint of how quiet the machine was.
  local quiet
  quiet=$(awk -v b0=$((c0c - c0a)) -v t0=$((c0d - c0b)) -v b1=$((c1c - c1a)) -v t1=$((c1d - c1b)) \
    -v s=$((t1 - t0)) 'BEGIN { printf "%.1f,%.1f,%.1f", t0 ? 100 * b0 / t0 : 0,
      t0 ? 100 * (b0 - s) / t0 : 0, t1 ? 100 * b1 / t1 : 0 }')
  echo "$out" >"$TMPD/wrk-$round-$wl-$srv.txt"
  local reqs rps non2xx=0 ec=0 er=0 ew=0 et=0 cpu
  reqs=$(echo "$out" | awk '/ requests in / {print $1; exit}')
  rps=$(echo "$out" | awk '/^Requests\/sec:/ {print $2; exit}')
  [ -n "$reqs" ] && [ -n "$rps" ] || { echo "$out" >&2; die "could not parse wrk output ($srv, $wl)"; }
  local l
  l=$(echo "$out" | grep 'Non-2xx or 3xx responses:') && non2xx=$(echo "$l" | awk '{print $NF}')
  l=$(echo "$out" | grep 'Socket errors:') &&
    read -r ec er ew et < <(echo "$l" | sed 's/[^0-9 ]//g' | awk '{print $1, $2, $3, $4}')
  cpu=$(awk -v t=$((t1 - t0)) -v k="$TCK" -v n="$reqs" 'BEGIN { printf "%.3f", n ? t / k * 1e6 / n : 0 }')
  local wcpu
  wcpu=$(awk -v t="$wrk_s" -v n="$reqs" 'BEGIN { printf "%.3f", n ? t * 1e6 / n : 0 }')
  echo "$round,$wl,$srv,$DURATION,$reqs,$rps,$((t1 - t0)),$cpu,$non2xx,$ec,$er,$ew,$et,$quiet,$wcpu" >>"$RUNS"
  log "round $round $wl $srv: $rps req/s, $cpu us CPU/req (wrk $wcpu), non-2xx $non2xx, socket errors $ec/$er/$ew/$et; CPU0/not-server/CPU1 busy % $quiet"
  if [ "$non2xx" != 0 ] || [ $((ec + er + ew + et)) -ne 0 ]; then
    echo "$out" >&2
    FAIL=1
  fi
}

for round in $(seq "$ROUNDS"); do
  # Alternate which server goes first, so drift in the machine hits both.
  if [ $((round % 2)) = 1 ]; then order="spindle nginx"; else order="nginx spindle"; fi
  for wl in keepalive close; do
    for srv in $order; do
      one_run "$round" "$wl" "$srv"
      sleep 0.5
    done
  done
done

# --- medians, ratios, table.
col() { awk -F, -v w="$1" -v s="$2" -v c="$3" 'NR > 1 && $2 == w && $3 == s {print $c}' "$RUNS"; }
SUMMARY=$OUT-summary.csv
MD=$OUT.md
echo "workload,server,runs,median_requests_per_s,median_cpu_us_per_request,rps_ratio_vs_nginx,cpu_ratio_vs_nginx" >"$SUMMARY"
{
  echo "### spindle vs nginx $(date -u +%Y-%m-%dT%H:%MZ)$([ "$SMOKE" = 1 ] && echo ' (smoke: no targets judged)')"
  echo
  echo "Machine: $(machine_desc). Servers pinned to CPU 0 (1 worker each), wrk -t1 -c$CONNS pinned to CPU 1, ${DURATION} s runs, $ROUNDS rounds, alternating."
  echo "Response bytes (headers + body, keep-alive): spindle $SP_HDR, nginx $NG_HDR."
  echo
  echo "| workload | server | req/s (median) | CPU µs/req (median) | req/s ÷ nginx | CPU ÷ nginx | req/s per run | CPU 0 busy outside the server (median %) | wrk CPU µs/req (median) |"
  echo "|---|---|---:|---:|---:|---:|---|---:|---:|"
} >"$MD"
for wl in keepalive close; do
  ng_rps=$(col "$wl" nginx 6 | median)
  ng_cpu=$(col "$wl" nginx 8 | median)
  for srv in spindle nginx; do
    rps=$(col "$wl" "$srv" 6 | median)
    cpu=$(col "$wl" "$srv" 8 | median)
    rr=$(ratio "$rps" "$ng_rps")
    cr=$(ratio "$cpu" "$ng_cpu")
    runs=$(col "$wl" "$srv" 6 | tr '\n' ' ' | sed 's/ $//')
    echo "$wl,$srv,$(col "$wl" "$srv" 6 | wc -l),$rps,$cpu,$rr,$cr" >>"$SUMMARY"
    other=$(col "$wl" "$srv" 15 | median)
    wcpu=$(col "$wl" "$srv" 17 | median)
    printf '| %s | %s | %.0f | %.2f | %s | %s | %s | %s | %.2f |\n' "$wl" "$srv" "$rps" "$cpu" "$rr" "$cr" "$runs" "$other" "$wcpu" >>"$MD"
  done
done
# Paired ratios: each round's spindle run against the nginx run next to it,
# which cancels slow drift in the machine's load better than the medians do.
{
  echo
  for wl in keepalive close; do
    awk -F, -v w="$wl" 'function isort(x, n,  i, j, t) { for (i = 2; i <= n; i++) { t = x[i]; for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t } }
      NR > 1 && $2 == w { if ($3 == "spindle") { sr[$1] = $6; sc[$1] = $8 } else { nr[$1] = $6; nc[$1] = $8 } }
      END { n = 0; for (r in sr) if (r in nr && nr[r] > 0 && nc[r] > 0) { n++; a[n] = sr[r] / nr[r]; b[n] = sc[r] / nc[r] }
        if (!n) exit
        isort(a, n); isort(b, n)
        m1 = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        m2 = (n % 2) ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2
        s1 = ""; s2 = ""; for (i = 1; i <= n; i++) { s1 = s1 sprintf(" %.3f", a[i]); s2 = s2 sprintf(" %.3f", b[i]) }
        printf "- %s, per-round ratios spindle ÷ nginx: req/s median %.3f (%s ), CPU/req median %.3f (%s )\n", w, m1, s1, m2, s2 }' "$RUNS"
  done
} >>"$MD"
if [ "$SMOKE" != 1 ]; then
  {
    echo
    echo "Targets (issue 6): req/s ≥ 0.95× nginx and CPU/req ≤ 1.0× nginx in both workloads."
    awk -F, 'NR > 1 && $2 == "spindle" {
      printf "- %s: req/s %.3f× (%s), CPU/req %.3f× (%s)\n", $1, $6, ($6 >= 0.95 ? "met" : "NOT met"), $7, ($7 <= 1.0 ? "met" : "NOT met") }' "$SUMMARY"
  } >>"$MD"
fi
{
  echo
  echo "The last column is CPU 0's busy time not charged to the server's processes (other processes, interrupts, softirq work for the loopback traffic): when it is high in keep-alive runs, the machine was not quiet and the req/s figures are not to be trusted; CPU/request is less sensitive. wrk's own CPU time per request shows when the one wrk thread, not the server, sets the rate (CPU 1 near 100 % busy, the server's CPU 0 not)."
} >>"$MD"
[ "$FAIL" = 1 ] && echo "**A run saw non-2xx responses or socket errors: see $RUNS.**" >>"$MD"
cat "$MD"
echo
echo "results: $MD $SUMMARY $RUNS"
exit "$FAIL"
