# bench/lib.sh — shell helpers shared by the bench scripts (sourced, not run).
#
# Every server a script starts is recorded with bench_track PID and stopped by
# bench_cleanup (installed as the EXIT trap by bench_init): by PID, never by
# name. All servers listen on 127.0.0.1 only.

BENCH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SPINDLE=${SPINDLE:-$BENCH_ROOT/build/spindle}
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
PY=${PY:-/usr/bin/python3}
RESULTS=${RESULTS:-$BENCH_ROOT/bench/results}
BENCH_PIDS=()

# bench_args NAME CONNS "$@": the options every side-by-side script takes
# (--smoke, --duration, --rounds, --connections; the same as environment
# variables), setting SMOKE, DURATION, ROUNDS, CONNS and OUT (results/NAME).
bench_args() {
  local name=$1
  SMOKE=${SMOKE:-0}
  DURATION=${DURATION:-5}
  ROUNDS=${ROUNDS:-3}
  CONNS=${CONNS:-$2}
  shift 2
  while [ $# -gt 0 ]; do
    case $1 in
      --smoke) SMOKE=1 ;;
      --duration) DURATION=$2; shift ;;
      --rounds) ROUNDS=$2; shift ;;
      --connections) CONNS=$2; shift ;;
      -h | --help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
      *) die "unknown argument: $1" ;;
    esac
    shift
  done
  if [ "$SMOKE" = 1 ]; then
    DURATION=1
    ROUNDS=1
  fi
  OUT=${OUT:-$RESULTS/$name$([ "$SMOKE" = 1 ] && echo -smoke)}
}

die() {
  echo "$(basename "$0"): $*" >&2
  exit 1
}

log() { echo "# $*" >&2; }

# bench_init: a scratch directory in $TMPD, the results directory, the trap.
bench_init() {
  TMPD=$(mktemp -d "${TMPDIR:-/tmp}/spindle-bench.XXXXXX")
  mkdir -p "$RESULTS"
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
}

bench_track() { BENCH_PIDS+=("$1"); }

# stop_pid PID [SIG]: signals PID, waits up to ~10 s, then KILLs it.
stop_pid() {
  local pid=$1 sig=${2:-TERM} i
  kill -0 "$pid" 2>/dev/null || return 0
  kill "-$sig" "$pid" 2>/dev/null
  for i in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    # Children first (a master may respawn them), then the process itself.
    local c
    for c in $(children_of "$pid"); do kill -KILL "$c" 2>/dev/null; done
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null
  return 0
}

bench_cleanup() {
  local p
  for p in "${BENCH_PIDS[@]}"; do stop_pid "$p"; done
  BENCH_PIDS=()
  [ -n "${TMPD:-}" ] && [ -z "${BENCH_KEEP_TMP:-}" ] && rm -rf "$TMPD"
}

# free_port: a TCP port on 127.0.0.1 nobody listens on right now.
free_port() {
  "$PY" -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# wait_listen PORT [SECONDS]: until something LISTENs on 127.0.0.1:PORT.
# Looks at the socket table rather than connecting, so the server sees no
# probe connections (instructions.sh relies on that).
wait_listen() {
  local port=$1 secs=${2:-10} i
  for i in $(seq $((secs * 20))); do
    if ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then return 0; fi
    sleep 0.05
  done
  return 1
}

# children_of PID: direct children (all threads' children).
children_of() {
  cat /proc/"$1"/task/*/children 2>/dev/null | tr ' ' '\n' | grep . || true
}

# tree_pids PID: PID and all its descendants.
tree_pids() {
  local p=$1 c
  echo "$p"
  for c in $(children_of "$p"); do tree_pids "$c"; done
}

# tree_ticks PID: utime+stime (clock ticks) summed over PID's process tree.
tree_ticks() {
  local sum=0 p st
  for p in $(tree_pids "$1"); do
    st=$(cat /proc/"$p"/stat 2>/dev/null) || continue
    # Fields after the ")" that ends comm: state is field 3; utime 14, stime 15.
    st=${st##*) }
    set -- $st
    sum=$((sum + ${12} + ${13}))
  done
  echo "$sum"
}

# cpu_stat N: "BUSY TOTAL" clock ticks of CPU N so far (/proc/stat; idle
# and iowait are not busy).
cpu_stat() {
  awk -v c="cpu$1" '$1 == c { t = 0; for (i = 2; i <= 9; i++) t += $i; print t - $5 - $6, t }' /proc/stat
}

# tree_mem PID: "RSS_KB PSS_KB" summed over PID's process tree.
tree_mem() {
  local rss=0 pss=0 p v
  for p in $(tree_pids "$1"); do
    v=$(awk '/^VmRSS:/ {print $2}' /proc/"$p"/status 2>/dev/null)
    rss=$((rss + ${v:-0}))
    v=$(awk '/^Pss:/ {print $2}' /proc/"$p"/smaps_rollup 2>/dev/null)
    pss=$((pss + ${v:-0}))
  done
  echo "$rss $pss"
}

# check_hello PORT: GET / answers 200 with "Hello world!".
check_hello() {
  local out
  out=$(curl -s -m 5 -o - -w ' %{http_code}' "http://127.0.0.1:$1/") || return 1
  [ "$out" = "Hello world! 200" ]
}

# write_nginx_conf DIR PORT [MASTER(on|off)] [WORKER_CONNECTIONS]: an nginx
# config for the hello-world peer in DIR/nginx.conf; every path it writes
# (pid, logs, temp directories) is inside DIR.
write_nginx_conf() {
  local dir=$1 port=$2 master=${3:-on} wc=${4:-4096} user_line=""
  mkdir -p "$dir/tmp"
  # As root, nginx would drop its worker to "nobody": keep the current user.
  if [ "$(id -u)" = 0 ]; then user_line="user $(id -un) $(id -gn);"; fi
  cat >"$dir/nginx.conf" <<EOF
$user_line
worker_processes 1;
master_process $master;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
worker_rlimit_nofile 20000;
events {
    worker_connections $wc;
}
http {
    access_log ${NGINX_ACCESS_LOG:-off};
    keepalive_requests 1000000;
    keepalive_timeout 65;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    server {
        listen 127.0.0.1:$port;
        default_type text/plain;
        location / {
            return 200 "Hello world!";
        }
    }
}
EOF
}

# nginx_cmd DIR: the command line that runs the config written above.
nginx_cmd() {
  echo "$NGINX -p $1 -c $1/nginx.conf -e $1/error.log"
}

# median: of the numbers on stdin, one per line.
median() {
  sort -g | awk '{a[NR] = $1} END {
    if (NR == 0) { print "nan"; exit }
    if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# ratio A B: A/B with 3 decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "nan"; else printf "%.3f\n", a / b }'; }

machine_desc() {
  local cpu
  cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
  echo "$(nproc) CPU ($cpu), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
}
