#!/bin/bash
# bench/wsgi.sh — spindle's WSGI binding (python3 -m spindle, 1 worker)
# against the Python WSGI servers from Debian's packages, and against two C
# references, on the same hello world: every server 1 worker/process pinned
# to CPU 0, wrk -t1 -c100 pinned to CPU 1, keep-alive and `Connection:
# close`, servers alternating within each round, several rounds; per server
# the median requests/s and the median server CPU time per request
# (utime+stime of its whole process tree / requests wrk completed).
#
# Apps (bench/wsgi_apps/):
#   hello   the seed hello world: start_response('200 OK', [('Content-Type',
#           'text/plain')]); return [b'Hello world!'] (no Content-Length)
#   webpy   web.py's "your IP" app (python3-webpy)
#   flask   a one-route Flask app (python3-flask)
# Servers:
#   spindle          PYTHONPATH=build/python python3 -m spindle APP --workers 1
#   gunicorn-sync    gunicorn -w 1 (sync worker)
#   gunicorn-gevent  gunicorn -w 1 -k gevent
#   uwsgi            uwsgi --plugin python3 --http-socket, --processes 1, no master
#   gevent           gevent.pywsgi.WSGIServer (wsgi_apps/gevent_serve.py)
#   eventlet         eventlet.wsgi.server (wsgi_apps/eventlet_serve.py)
#   wsgiref          wsgiref.simple_server (wsgi_apps/wsgiref_serve.py)
#   nginx            C reference: nginx `return 200 "Hello world!"`, 1 worker
#   spindle-c        C reference: build/spindle --workers 1 (its hello world)
# hello runs on all of them; webpy and flask on spindle, gunicorn-sync,
# uwsgi, gunicorn-gevent (PEERS_APPS to change). Peers that are not installed
# are skipped and named. Run as root (and not in smoke mode, and without
# NO_INSTALL=1) it first runs `apt-get install -y` once for the missing
# Debian packages (gunicorn uwsgi uwsgi-plugin-python3 python3-gevent
# python3-eventlet python3-webpy python3-flask), one by one if the batch
# fails.
#
# The binding and the C binary are copied to a scratch directory first, so a
# rebuild during the run does not change what is measured.
#
# usage: bench/wsgi.sh [--smoke] [--duration SEC] [--rounds N] [--connections N]
#   env: DURATION (5), ROUNDS (3), CONNS (100), SMOKE=1 (1 s runs, 1 round,
#        keep-alive for every present peer, close for spindle/spindle-c/nginx
#        only, webpy/flask on spindle only; never installs),
#        SERVERS (hello peers, default all), PEERS_APPS, APPS ("hello webpy
#        flask"), NO_INSTALL=1, SPINDLE_PY (dir holding the spindle package,
#        default build/python), SPINDLE, NGINX, PY (/usr/bin/python3), OUT
# Exits non-zero if spindle, spindle-c or nginx saw a non-2xx response or a
# socket error (peers' errors are only reported: slow servers time out).
set -uo pipefail
. "$(dirname "$0")/lib.sh"

bench_args wsgi 100 "$@"
APPS=${APPS:-hello webpy flask}
ALL_SERVERS="spindle spindle-c nginx uwsgi gunicorn-sync gunicorn-gevent gevent eventlet wsgiref"
SERVERS=${SERVERS:-$ALL_SERVERS}
if [ "$SMOKE" = 1 ]; then
  PEERS_APPS=${PEERS_APPS:-spindle}
else
  PEERS_APPS=${PEERS_APPS:-spindle gunicorn-sync uwsgi gunicorn-gevent}
fi
SPINDLE_PY=${SPINDLE_PY:-$BENCH_ROOT/build/python}
WSGI_APPS=$BENCH_ROOT/bench/wsgi_apps

command -v wrk >/dev/null || die "wrk not installed (scripts/deps.sh)"
[ "$(nproc)" -ge 2 ] || die "needs 2 CPUs (servers on CPU 0, wrk on CPU 1)"

# --- missing peers: installed once, as root, outside smoke mode.
if [ "$SMOKE" != 1 ] && [ -z "${NO_INSTALL:-}" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  missing=()
  for p in gunicorn uwsgi uwsgi-plugin-python3 python3-gevent python3-eventlet python3-webpy python3-flask; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]} (apt-get)"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >&2; then
      for p in "${missing[@]}"; do
        DEBIAN_FRONTEND=noninteractive apt-get install -y "$p" >&2 || log "apt-get install $p failed: skipping it"
      done
    fi
  fi
fi

bench_init
TCK=$(getconf CLK_TCK)

# Stopping: TERM to every server at once, then wait for all together (a
# gunicorn master takes seconds to stop its worker); KILL, by PID, whatever
# (with its children) is still alive after 10 s. Replaces bench_cleanup.
wsgi_cleanup() {
  local p i alive c
  for p in "${BENCH_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for i in $(seq 100); do
    alive=0
    for p in "${BENCH_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for p in "${BENCH_PIDS[@]}"; do
    if kill -0 "$p" 2>/dev/null; then
      for c in $(children_of "$p"); do kill -KILL "$c" 2>/dev/null; done
      kill -KILL "$p" 2>/dev/null
    fi
    wait "$p" 2>/dev/null
  done
  BENCH_PIDS=()
  [ -n "${TMPD:-}" ] && [ -z "${BENCH_KEEP_TMP:-}" ] && rm -rf "$TMPD"
}
trap wsgi_cleanup EXIT

# --- snapshot what is measured.
SNAP=$TMPD/snap
mkdir -p "$SNAP/python"
[ -d "$SPINDLE_PY/spindle" ] && cp -r "$SPINDLE_PY/spindle" "$SNAP/python/"
[ -x "$SPINDLE" ] && cp "$SPINDLE" "$SNAP/spindle"

# have SERVER: is this peer present?
pyimport() { "$PY" -c "import $1" >/dev/null 2>&1; }
have() {
  case $1 in
    spindle) PYTHONPATH=$SNAP/python "$PY" -c 'import spindle._spindle' >/dev/null 2>&1 ;;
    spindle-c) [ -x "$SNAP/spindle" ] ;;
    nginx) [ -x "$NGINX" ] ;;
    uwsgi) command -v uwsgi >/dev/null && ls /usr/lib/uwsgi/plugins/python3*_plugin.so >/dev/null 2>&1 ;;
    gunicorn-sync) command -v gunicorn >/dev/null ;;
    gunicorn-gevent) command -v gunicorn >/dev/null && pyimport gevent ;;
    gevent) pyimport gevent ;;
    eventlet) pyimport eventlet ;;
    wsgiref) pyimport wsgiref.simple_server ;;
    *) return 1 ;;
  esac
}
have_app() {
  case $1 in
    hello) return 0 ;;
    webpy) pyimport web ;;
    flask) pyimport flask ;;
    *) return 1 ;;
  esac
}
module_of() {
  case $1 in
    hello) echo hello:application ;;
    webpy) echo webpy_ip:application ;;
    flask) echo flask_hello:application ;;
  esac
}

SKIPPED=()
PRESENT=()
for s in $SERVERS; do
  if have "$s"; then PRESENT+=("$s"); else SKIPPED+=("$s"); fi
done
have spindle || die "the spindle binding is not importable from $SPINDLE_PY (make python)"
RUN_APPS=()
SKIPPED_APPS=()
for a in $APPS; do
  if have_app "$a"; then RUN_APPS+=("$a"); else SKIPPED_APPS+=("$a"); fi
done
[ ${#SKIPPED[@]} -gt 0 ] && log "skipped (not installed): ${SKIPPED[*]}"
[ ${#SKIPPED_APPS[@]} -gt 0 ] && log "apps skipped (framework not installed): ${SKIPPED_APPS[*]}"

# servers_for APP: the servers that run APP, in a fixed order.
servers_for() {
  local s
  if [ "$1" = hello ]; then
    echo "${PRESENT[*]}"
  else
    for s in "${PRESENT[@]}"; do
      case " $PEERS_APPS " in *" $s "*) [ "$s" != nginx ] && [ "$s" != spindle-c ] && echo -n "$s " ;; esac
    done
    echo
  fi
}

# --- servers: started once, pinned to CPU 0, idle when not driven.
declare -A PORT PID HDR
start_server() {
  local app=$1 srv=$2 key="$1/$2" port mod cmd=() dir="$TMPD/$1-$2"
  port=$(free_port)
  mod=$(module_of "$app")
  mkdir -p "$dir"
  case $srv in
    spindle) cmd=(env PYTHONPATH="$SNAP/python" "$PY" -m spindle "$mod" --chdir "$WSGI_APPS"
      --bind "127.0.0.1:$port" --workers 1 --log-level warning) ;;
    spindle-c) cmd=("$SNAP/spindle" --bind "127.0.0.1:$port" --workers 1 --log-level warning) ;;
    nginx)
      write_nginx_conf "$dir" "$port" on 4096
      read -ra cmd < <(nginx_cmd "$dir") ;;
    uwsgi) cmd=(uwsgi --plugin python3 --http-socket "127.0.0.1:$port" --chdir "$WSGI_APPS"
      --module "$mod" --processes 1 --disable-logging --listen 1024 --die-on-term --need-app) ;;
    gunicorn-sync) cmd=(gunicorn --workers 1 --bind "127.0.0.1:$port" --chdir "$WSGI_APPS"
      --backlog 2048 --graceful-timeout 3 --log-level warning "$mod") ;;
    gunicorn-gevent) cmd=(gunicorn --workers 1 -k gevent --worker-connections 1000
      --bind "127.0.0.1:$port" --chdir "$WSGI_APPS" --backlog 2048 --graceful-timeout 3 --log-level warning "$mod") ;;
    gevent) cmd=("$PY" "$WSGI_APPS/gevent_serve.py" "$mod" "$port") ;;
    eventlet) cmd=("$PY" "$WSGI_APPS/eventlet_serve.py" "$mod" "$port") ;;
    wsgiref) cmd=("$PY" "$WSGI_APPS/wsgiref_serve.py" "$mod" "$port") ;;
  esac
  (cd "$dir" && exec taskset -c 0 "${cmd[@]}") >"$dir/server.log" 2>&1 &
  PID[$key]=$!
  PORT[$key]=$port
  bench_track "${PID[$key]}"
  echo "${cmd[*]}" >"$dir/cmd"
}

# check_app APP PORT: GET / answers 200 with the app's body.
check_app() {
  local out want
  case $1 in
    webpy) want="127.0.0.1 200" ;;
    *) want="Hello world! 200" ;;
  esac
  out=$(curl -s -m 5 -o - -w ' %{http_code}' "http://127.0.0.1:$2/") || return 1
  [ "$out" = "$want" ]
}

for app in "${RUN_APPS[@]}"; do
  for srv in $(servers_for "$app"); do start_server "$app" "$srv"; done
done
for app in "${RUN_APPS[@]}"; do
  for srv in $(servers_for "$app"); do
    key="$app/$srv"
    if ! wait_listen "${PORT[$key]}" 20 || ! kill -0 "${PID[$key]}" 2>/dev/null; then
      cat "$TMPD/$app-$srv/server.log" >&2
      die "$key did not start: $(cat "$TMPD/$app-$srv/cmd")"
    fi
  done
done
sleep 1 # workers forked after the listen (gunicorn, spindle) and app imports
for app in "${RUN_APPS[@]}"; do
  for srv in $(servers_for "$app"); do
    key="$app/$srv"
    ok=0
    for _ in $(seq 40); do
      if check_app "$app" "${PORT[$key]}"; then ok=1; break; fi
      sleep 0.25
    done
    [ $ok = 1 ] || { cat "$TMPD/$app-$srv/server.log" >&2; die "$key: GET / is not the expected 200 answer"; }
    HDR[$key]=$(curl -s -m 5 -D - -o /dev/null "http://127.0.0.1:${PORT[$key]}/" | wc -c)
    log "$key: pid ${PID[$key]} port ${PORT[$key]} ($(tree_pids "${PID[$key]}" | wc -l) processes), response head ${HDR[$key]} bytes"
  done
done
log "servers up ($SECONDS s since start)"
log "duration ${DURATION}s, rounds $ROUNDS, connections $CONNS; $(machine_desc)"

RUNS=$OUT-runs.csv
echo "round,app,workload,server,duration_s,requests,requests_per_s,cpu_ticks,cpu_us_per_request,non2xx,err_connect,err_read,err_write,err_timeout,cpu0_busy_pct,cpu0_not_server_pct,cpu1_busy_pct,wrk_cpu_us_per_request" >"$RUNS"
FAIL=0

# one_run ROUND APP WORKLOAD SERVER (the method of vs-nginx.sh)
one_run() {
  local round=$1 app=$2 wl=$3 srv=$4 key="$2/$4" port pid hdr=() t0 t1 out
  port=${PORT[$key]}
  pid=${PID[$key]}
  [ "$wl" = close ] && hdr=(-H 'Connection: close')
  kill -0 "$pid" 2>/dev/null || die "$key (pid $pid) died"
  local c0a c0b c1a c1b c0c c0d c1c c1d
  read -r c0a c0b < <(cpu_stat 0)
  read -r c1a c1b < <(cpu_stat 1)
  t0=$(tree_ticks "$pid")
  times >"$TMPD/times0"
  taskset -c 1 wrk -t1 -c"$CONNS" -d"${DURATION}s" "${hdr[@]}" "http://127.0.0.1:$port/" >"$TMPD/wrk.out" 2>&1
  times >"$TMPD/times1"
  t1=$(tree_ticks "$pid")
  read -r c0c c0d < <(cpu_stat 0)
  read -r c1c c1d < <(cpu_stat 1)
  out=$(cat "$TMPD/wrk.out")
  local wrk_s quiet
  wrk_s=$(cat "$TMPD/times0" "$TMPD/times1" | awk 'function sec(x,  m) { m = x; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", x); sub(/s$/, "", x); return m * 60 + x }
    NR == 2 { a = sec($1) + sec($2) } NR == 4 { b = sec($1) + sec($2) } END { printf "%.3f", b - a }')
  quiet=$(awk -v b0=$((c0c - c0a)) -v t0=$((c0d - c0b)) -v b1=$((c1c - c1a)) -v t1=$((c1d - c1b)) \
    -v s=$((t1 - t0)) 'BEGIN { printf "%.1f,%.1f,%.1f", t0 ? 100 * b0 / t0 : 0,
      t0 ? 100 * (b0 - s) / t0 : 0, t1 ? 100 * b1 / t1 : 0 }')
  echo "$out" >"$TMPD/wrk-$round-$app-$wl-$srv.txt"
  local reqs rps non2xx=0 ec=0 er=0 ew=0 et=0 cpu wcpu l
  reqs=$(echo "$out" | awk '/ requests in / {print $1; exit}')
  rps=$(echo "$out" | awk '/^Requests\/sec:/ {print $2; exit}')
  [ -n "$reqs" ] && [ -n "$rps" ] || { echo "$out" >&2; die "could not parse wrk output ($key, $wl)"; }
  l=$(echo "$out" | grep 'Non-2xx or 3xx responses:') && non2xx=$(echo "$l" | awk '{print $NF}')
  l=$(echo "$out" | grep 'Socket errors:') &&
    read -r ec er ew et < <(echo "$l" | sed 's/[^0-9 ]//g' | awk '{print $1, $2, $3, $4}')
  cpu=$(awk -v t=$((t1 - t0)) -v k="$TCK" -v n="$reqs" 'BEGIN { printf "%.3f", n ? t / k * 1e6 / n : 0 }')
  wcpu=$(awk -v t="$wrk_s" -v n="$reqs" 'BEGIN { printf "%.3f", n ? t * 1e6 / n : 0 }')
  echo "$round,$app,$wl,$srv,$DURATION,$reqs,$rps,$((t1 - t0)),$cpu,$non2xx,$ec,$er,$ew,$et,$quiet,$wcpu" >>"$RUNS"
  log "round $round $app $wl $srv: $rps req/s, $cpu us CPU/req (wrk $wcpu), non-2xx $non2xx, socket errors $ec/$er/$ew/$et; CPU0/not-server/CPU1 busy % $quiet"
  if [ "$non2xx" != 0 ] || [ $((ec + er + ew + et)) -ne 0 ]; then
    case $srv in spindle | spindle-c | nginx)
      echo "$out" >&2
      FAIL=1 ;;
    esac
  fi
}

# workloads_for APP SERVER
workloads_for() {
  if [ "$SMOKE" = 1 ]; then
    case "$1/$2" in hello/spindle | hello/spindle-c | hello/nginx) echo "keepalive close" ;; *) echo keepalive ;; esac
  else
    echo "keepalive close"
  fi
}

# reverse WORDS...
reverse() { local out="" w; for w in "$@"; do out="$w $out"; done; echo "$out"; }

for round in $(seq "$ROUNDS"); do
  for app in "${RUN_APPS[@]}"; do
    for wl in keepalive close; do
      # Alternate the order of the servers between rounds, so drift in the
      # machine's load hits all of them.
      order=$(servers_for "$app")
      [ $((round % 2)) = 0 ] && order=$(reverse $order)
      for srv in $order; do
        case " $(workloads_for "$app" "$srv") " in *" $wl "*) ;; *) continue ;; esac
        one_run "$round" "$app" "$wl" "$srv"
        sleep 0.5
      done
    done
  done
done

log "runs done ($SECONDS s since start)"
PY_VERSION=$("$PY" -c 'import sys; print("Python %d.%d.%d" % sys.version_info[:3])')
VERSIONS=$( {
  have nginx && "$NGINX" -v 2>&1 | sed 's/.*: //'
  command -v uwsgi >/dev/null && echo "uWSGI $(uwsgi --version)"
  command -v gunicorn >/dev/null && gunicorn --version 2>&1 | sed 's/(version \(.*\))/\1/'
  for m in gevent eventlet greenlet; do "$PY" -c "import $m; print('$m', $m.__version__)" 2>/dev/null; done
  wrk -v 2>&1 | head -1 | cut -d' ' -f1,2
} | paste -sd, | sed 's/,/, /g')

# --- medians, ratios, tables.
col() { awk -F, -v a="$1" -v w="$2" -v s="$3" -v c="$4" 'NR > 1 && $2 == a && $3 == w && $4 == s {print $c}' "$RUNS"; }
med() { col "$@" | median; }
SUMMARY=$OUT-summary.csv
MD=$OUT.md
echo "app,workload,server,runs,median_requests_per_s,median_cpu_us_per_request,spindle_rps_over_server_rps,server_cpu_over_spindle_c_cpu,non2xx,socket_errors" >"$SUMMARY"
{
  echo "### WSGI servers $(date -u +%Y-%m-%dT%H:%MZ)$([ "$SMOKE" = 1 ] && echo ' (smoke: no targets judged)')"
  echo
  echo "Machine: $(machine_desc). $PY_VERSION; $VERSIONS. Every server 1 worker/process pinned to CPU 0, wrk -t1 -c$CONNS pinned to CPU 1, ${DURATION} s runs, $ROUNDS round(s), servers alternating."
  [ ${#SKIPPED[@]} -gt 0 ] && echo "Skipped (not installed): ${SKIPPED[*]}."
  [ ${#SKIPPED_APPS[@]} -gt 0 ] && echo "Apps skipped (framework not installed): ${SKIPPED_APPS[*]}."
} >"$MD"
for app in "${RUN_APPS[@]}"; do
  {
    echo
    echo "#### $app"
    echo
    echo "| workload | server | req/s (median) | CPU µs/req (median) | spindle req/s ÷ this | CPU ÷ spindle-c | req/s per run | errors (non-2xx / socket) | CPU 0 busy outside the server (median %) | wrk CPU µs/req | response head bytes |"
    echo "|---|---|---:|---:|---:|---:|---|---|---:|---:|---:|"
  } >>"$MD"
  for wl in keepalive close; do
    sp_rps=$(med "$app" "$wl" spindle 7)
    c_cpu=$(med hello "$wl" spindle-c 9)
    for srv in $(servers_for "$app"); do
      n=$(col "$app" "$wl" "$srv" 7 | wc -l)
      [ "$n" = 0 ] && continue
      rps=$(med "$app" "$wl" "$srv" 7)
      cpu=$(med "$app" "$wl" "$srv" 9)
      rr=$(ratio "$sp_rps" "$rps")
      cr=$( [ "$c_cpu" != nan ] && ratio "$cpu" "$c_cpu" || echo nan)
      runs=$(col "$app" "$wl" "$srv" 7 | awk '{printf "%s%.0f", (NR > 1 ? " " : ""), $1}')
      non2xx=$(col "$app" "$wl" "$srv" 10 | awk '{s += $1} END {print s + 0}')
      serr=$(awk -F, -v a="$app" -v w="$wl" -v s="$srv" 'NR > 1 && $2 == a && $3 == w && $4 == s {t += $11 + $12 + $13 + $14} END {print t + 0}' "$RUNS")
      echo "$app,$wl,$srv,$n,$rps,$cpu,$rr,$cr,$non2xx,$serr" >>"$SUMMARY"
      printf '| %s | %s | %.0f | %.2f | %s | %s | %s | %s | %s | %.2f | %s |\n' "$wl" "$srv" "$rps" "$cpu" "$rr" "$cr" \
        "$runs" "$non2xx / $serr" "$(med "$app" "$wl" "$srv" 16)" "$(med "$app" "$wl" "$srv" 18)" "${HDR[$app/$srv]}" >>"$MD"
    done
  done
done

# Paired ratios, hello: each round's spindle run against the peer's run in
# the same round (cancels slow drift better than medians).
paired() { # WL PEER COLUMN
  awk -F, -v w="$1" -v p="$2" -v c="$3" 'function isort(x, n,  i, j, t) { for (i = 2; i <= n; i++) { t = x[i]; for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t } }
    NR > 1 && $2 == "hello" && $3 == w { if ($4 == "spindle") s[$1] = $c; else if ($4 == p) q[$1] = $c }
    END { n = 0; for (r in s) if (r in q && q[r] > 0) { n++; a[n] = s[r] / q[r] }
      if (!n) { print "nan"; exit }
      isort(a, n); printf "%.3f", (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }' "$RUNS"
}
if [ "$SMOKE" != 1 ]; then
  {
    echo
    echo "Targets (issue 8), hello world, spindle (Python) against peers in the same run — median-of-runs ratio (paired per-round median in brackets):"
    for wl in keepalive close; do
      sp=$(med hello "$wl" spindle 7)
      spc=$(med hello "$wl" spindle 9)
      line="- $wl:"
      for pair in "nginx:0.9" "uwsgi:4" "gunicorn-sync:10"; do
        peer=${pair%%:*}
        want=${pair##*:}
        pr=$(med hello "$wl" "$peer" 7)
        [ "$pr" = nan ] && { line="$line req/s vs $peer: not run;"; continue; }
        r=$(ratio "$sp" "$pr")
        line="$line req/s ÷ $peer $r× (≥ $want: $(awk -v r="$r" -v w="$want" 'BEGIN { print (r >= w ? "met" : "NOT met") }'); paired $(paired "$wl" "$peer" 7));"
      done
      cc=$(med hello "$wl" spindle-c 9)
      if [ "$cc" != nan ]; then
        r=$(ratio "$spc" "$cc")
        line="$line CPU/req ÷ spindle-c $r× (≤ 2: $(awk -v r="$r" 'BEGIN { print (r <= 2 ? "met" : "NOT met") }'); paired $(paired "$wl" spindle-c 9))"
      fi
      echo "$line"
    done
  } >>"$MD"
fi
{
  echo
  echo "CPU per request is utime+stime of the server's process tree (master and workers) over the run, divided by the requests wrk completed; 'CPU 0 busy outside the server' is the rest of CPU 0's busy time (other processes, interrupts): high values mean the machine was not quiet. uWSGI's --http-socket and gunicorn's sync worker close the connection after every response, so their keep-alive rows are really close rows."
} >>"$MD"
[ "$FAIL" = 1 ] && echo "**spindle, spindle-c or nginx saw non-2xx responses or socket errors: see $RUNS.**" >>"$MD"
cat "$MD"
echo
echo "results: $MD $SUMMARY $RUNS"
[ "$FAIL" = 0 ]
