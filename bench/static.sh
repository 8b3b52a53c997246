#!/bin/bash
# bench/static.sh — static files: spindle (--workers 1 --root DIR) against
# nginx (1 worker, root at the same directory, sendfile on, access_log off)
# on a 1 KiB and a 1 MiB file, side by side: both servers pinned to CPU 0,
# wrk (1 thread, keep-alive) pinned to CPU 1, short runs alternating the two
# servers for several rounds.
#
# Reports per server and file the median requests/s and the median server
# CPU time per request (utime+stime of the server's process tree, from
# /proc/PID/stat before and after each wrk run, divided by the requests wrk
# completed), and the ratios spindle/nginx (issue 7's target: req/s ≥ 1.0×
# nginx for both files). Writes a Markdown table and CSVs to bench/results/.
#
# usage: bench/static.sh [--smoke] [--duration SEC] [--rounds N] [--connections N]
#   env: DURATION (5), ROUNDS (3), CONNS (50), SMOKE=1 (1 s runs, 1 round),
#        SPINDLE (build/spindle), NGINX, OUT (result file prefix)
# Exits non-zero if a run saw a non-2xx response or a socket error.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

bench_args static 50 "$@"

[ -x "$SPINDLE" ] || die "$SPINDLE not built (run make)"
"$SPINDLE" --help 2>&1 | grep -q -- --root || die "$SPINDLE has no --root"
command -v wrk >/dev/null || die "wrk not installed (scripts/deps.sh)"
[ -x "$NGINX" ] || die "nginx not installed (scripts/deps.sh)"
[ "$(nproc)" -ge 2 ] || die "needs 2 CPUs (servers on CPU 0, wrk on CPU 1)"
bench_init
TCK=$(getconf CLK_TCK)

# --- the files: random bytes (nothing to gain from compression either way).
DOCS=$TMPD/docs
mkdir -p "$DOCS"
head -c 1024 /dev/urandom >"$DOCS/1k.bin"
head -c 1048576 /dev/urandom >"$DOCS/1m.bin"
FILES="1k.bin 1m.bin"

# --- nginx: the peer, configured as a plain static server.
write_static_nginx_conf() {
  local dir=$1 port=$2 user_line=""
  mkdir -p "$dir/tmp"
  if [ "$(id -u)" = 0 ]; then user_line="user $(id -un) $(id -gn);"; fi
  cat >"$dir/nginx.conf" <<EOF
$user_line
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events {
    worker_connections 4096;
}
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 65;
    default_type application/octet-stream;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    server {
        listen 127.0.0.1:$port;
        root $DOCS;
    }
}
EOF
}

SP_PORT=$(free_port)
taskset -c 0 "$SPINDLE" --bind "127.0.0.1:$SP_PORT" --workers 1 --log-level warning --root "$DOCS" \
  >"$TMPD/spindle.log" 2>&1 &
SP_PID=$!
bench_track "$SP_PID"

NG_PORT=$(free_port)
write_static_nginx_conf "$TMPD/nginx" "$NG_PORT"
taskset -c 0 $(nginx_cmd "$TMPD/nginx") >"$TMPD/nginx.log" 2>&1 &
NG_PID=$!
bench_track "$NG_PID"

wait_listen "$SP_PORT" || { cat "$TMPD/spindle.log"; die "spindle did not start"; }
wait_listen "$NG_PORT" || { cat "$TMPD/nginx.log" "$TMPD/nginx/error.log"; die "nginx did not start"; }
sleep 0.3
port_of() { if [ "$1" = spindle ]; then echo "$SP_PORT"; else echo "$NG_PORT"; fi; }
pid_of() { if [ "$1" = spindle ]; then echo "$SP_PID"; else echo "$NG_PID"; fi; }
for srv in spindle nginx; do
  for f in $FILES; do
    curl -s -m 5 -o "$TMPD/check" "http://127.0.0.1:$(port_of $srv)/$f" || die "$srv: GET /$f failed"
    cmp -s "$TMPD/check" "$DOCS/$f" || die "$srv: GET /$f is not the file"
  done
done
head_bytes() { curl -s -m 5 -D - -o /dev/null "http://127.0.0.1:$1/1k.bin" | wc -c; }
SP_HDR=$(head_bytes "$SP_PORT")
NG_HDR=$(head_bytes "$NG_PORT")
log "spindle pid $SP_PID port $SP_PORT, nginx pid $NG_PID port $NG_PORT"
log "duration ${DURATION}s, rounds $ROUNDS, connections $CONNS; $(machine_desc)"

RUNS=$OUT-runs.csv
echo "round,file,server,duration_s,requests,requests_per_s,transfer_per_s,cpu_ticks,cpu_us_per_request,non2xx,socket_errors,cpu0_not_server_pct" >"$RUNS"
FAIL=0

# one_run ROUND FILE SERVER
one_run() {
  local round=$1 f=$2 srv=$3 port pid t0 t1 out c0a c0b c0c c0d
  port=$(port_of "$srv")
  pid=$(pid_of "$srv")
  kill -0 "$pid" 2>/dev/null || die "$srv (pid $pid) died"
  read -r c0a c0b < <(cpu_stat 0)
  t0=$(tree_ticks "$pid")
  out=$(taskset -c 1 wrk -t1 -c"$CONNS" -d"${DURATION}s" "http://127.0.0.1:$port/$f" 2>&1)
  t1=$(tree_ticks "$pid")
  read -r c0c c0d < <(cpu_stat 0)
  echo "$out" >"$TMPD/wrk-$round-$f-$srv.txt"
  local reqs rps xfer non2xx=0 errs=0 cpu other l
  reqs=$(echo "$out" | awk '/ requests in / {print $1; exit}')
  rps=$(echo "$out" | awk '/^Requests\/sec:/ {print $2; exit}')
  xfer=$(echo "$out" | awk '/^Transfer\/sec:/ {print $2; exit}')
  [ -n "$reqs" ] && [ -n "$rps" ] || { echo "$out" >&2; die "could not parse wrk output ($srv, $f)"; }
  l=$(echo "$out" | grep 'Non-2xx or 3xx responses:') && non2xx=$(echo "$l" | awk '{print $NF}')
  l=$(echo "$out" | grep 'Socket errors:') &&
    errs=$(echo "$l" | sed 's/[^0-9 ]//g' | awk '{print $1 + $2 + $3 + $4}')
  cpu=$(awk -v t=$((t1 - t0)) -v k="$TCK" -v n="$reqs" 'BEGIN { printf "%.3f", n ? t / k * 1e6 / n : 0 }')
  other=$(awk -v b=$((c0c - c0a)) -v t=$((c0d - c0b)) -v s=$((t1 - t0)) \
    'BEGIN { printf "%.1f", t ? 100 * (b - s) / t : 0 }')
  echo "$round,$f,$srv,$DURATION,$reqs,$rps,$xfer,$((t1 - t0)),$cpu,$non2xx,$errs,$other" >>"$RUNS"
  log "round $round $f $srv: $rps req/s ($xfer/s), $cpu us CPU/req, non-2xx $non2xx, socket errors $errs, CPU0 not-server $other%"
  if [ "$non2xx" != 0 ] || [ "$errs" != 0 ]; then
    echo "$out" >&2
    FAIL=1
  fi
}

for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then order="spindle nginx"; else order="nginx spindle"; fi
  for f in $FILES; do
    for srv in $order; do
      one_run "$round" "$f" "$srv"
      sleep 0.3
    done
  done
done

col() { awk -F, -v f="$1" -v s="$2" -v c="$3" 'NR > 1 && $2 == f && $3 == s {print $c}' "$RUNS"; }
SUMMARY=$OUT-summary.csv
MD=$OUT.md
echo "file,server,runs,median_requests_per_s,median_cpu_us_per_request,rps_ratio_vs_nginx,cpu_ratio_vs_nginx" >"$SUMMARY"
{
  echo "### static files: spindle vs nginx $(date -u +%Y-%m-%dT%H:%MZ)$([ "$SMOKE" = 1 ] && echo ' (smoke: no targets judged)')"
  echo
  echo "Machine: $(machine_desc). Servers pinned to CPU 0 (1 worker each; nginx with sendfile on, access_log off), wrk -t1 -c$CONNS keep-alive pinned to CPU 1, ${DURATION} s runs, $ROUNDS rounds, alternating."
  echo "Response head bytes (1k.bin): spindle $SP_HDR, nginx $NG_HDR."
  echo
  echo "| file | server | req/s (median) | CPU µs/req (median) | req/s ÷ nginx | CPU ÷ nginx | req/s per run | CPU 0 busy outside the server (median %) |"
  echo "|---|---|---:|---:|---:|---:|---|---:|"
} >"$MD"
for f in $FILES; do
  ng_rps=$(col "$f" nginx 6 | median)
  ng_cpu=$(col "$f" nginx 9 | median)
  for srv in spindle nginx; do
    rps=$(col "$f" "$srv" 6 | median)
    cpu=$(col "$f" "$srv" 9 | median)
    rr=$(ratio "$rps" "$ng_rps")
    cr=$(ratio "$cpu" "$ng_cpu")
    runs=$(col "$f" "$srv" 6 | tr '\n' ' ' | sed 's/ $//')
    other=$(col "$f" "$srv" 12 | median)
    echo "$f,$srv,$(col "$f" "$srv" 6 | wc -l),$rps,$cpu,$rr,$cr" >>"$SUMMARY"
    printf '| %s | %s | %.0f | %.2f | %s | %s | %s | %s |\n' "$f" "$srv" "$rps" "$cpu" "$rr" "$cr" "$runs" "$other" >>"$MD"
  done
done
if [ "$SMOKE" != 1 ]; then
  {
    echo
    echo "Target (issue 7): req/s ≥ 1.0× nginx for both files."
    awk -F, 'NR > 1 && $2 == "spindle" {
      printf "- %s: req/s %.3f× (%s), CPU/req %.3f×\n", $1, $6, ($6 >= 1.0 ? "met" : "NOT met"), $7 }' "$SUMMARY"
  } >>"$MD"
fi
[ "$FAIL" = 1 ] && echo "**A run saw non-2xx responses or socket errors: see $RUNS.**" >>"$MD"
cat "$MD"
echo
echo "results: $MD $SUMMARY $RUNS"
exit "$FAIL"
