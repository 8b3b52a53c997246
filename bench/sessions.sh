#!/bin/bash
# bench/sessions.sh — Eurasia's session test: the session demo
# (examples/sessions.c) with a new session per request — wrk sends no
# cookie, so every request makes a session, sets its counter and stores it
# — for the memory and SQLite stores, beside the plain hello world served
# by the same program (GET /hello), one process pinned to CPU 0 and wrk
# (1 thread) to CPU 1 when there are two CPUs.
#
# Reports requests/s per workload and the ratio to hello world (target:
# the SQLite store keeps >= 30% of hello world's requests/s). Writes a
# Markdown table to bench/results/sessions(.md|-smoke.md).
#
# usage: bench/sessions.sh [--smoke]
#   env: DURATION (10), CONNS (100), SMOKE=1 (1 s runs),
#        SESSIONS_BIN (build/examples/sessions), OUT (result file prefix)
# Exits non-zero if a run saw a non-2xx response or a socket error.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

SMOKE=${SMOKE:-0}
DURATION=${DURATION:-10}
CONNS=${CONNS:-100}
[ "${1:-}" = --smoke ] && SMOKE=1
[ "$SMOKE" = 1 ] && DURATION=1
OUT=${OUT:-$RESULTS/sessions$([ "$SMOKE" = 1 ] && echo -smoke)}
BIN=${SESSIONS_BIN:-$BENCH_ROOT/build/examples/sessions}

[ -x "$BIN" ] || die "$BIN not built (run make)"
command -v wrk >/dev/null || die "wrk not installed (scripts/deps.sh)"
bench_init
if [ "$(nproc)" -ge 2 ]; then
  SRV_CPU=(taskset -c 0)
  WRK_CPU=(taskset -c 1)
else
  SRV_CPU=()
  WRK_CPU=()
fi

# run_wrk PORT PATH NAME: prints requests/s; FAIL=1 on errors.
FAIL=0
run_wrk() {
  local out rps non2xx=0 l errs=0
  out=$("${WRK_CPU[@]}" wrk -t1 -c"$CONNS" -d"${DURATION}s" "http://127.0.0.1:$1$2" 2>&1)
  echo "$out" >"$TMPD/wrk-$3.txt"
  rps=$(echo "$out" | awk '/^Requests\/sec:/ {print $2; exit}')
  [ -n "$rps" ] || { echo "$out" >&2; die "could not parse wrk output ($3)"; }
  l=$(echo "$out" | grep 'Non-2xx or 3xx responses:') && non2xx=$(echo "$l" | awk '{print $NF}')
  l=$(echo "$out" | grep 'Socket errors:') && errs=$(echo "$l" | sed 's/[^0-9 ]//g' | awk '{print $1 + $2 + $3 + $4}')
  if [ "$non2xx" != 0 ] || [ "$errs" != 0 ]; then
    log "$3: non-2xx $non2xx, socket errors $errs"
    FAIL=1
  fi
  log "$3: $rps req/s"
  echo "$rps"
}

# serve STORE: starts the demo with STORE; sets PORT and PID.
serve() {
  PORT=$(free_port)
  "${SRV_CPU[@]}" "$BIN" "127.0.0.1:$PORT" "$1" >"$TMPD/server-${1%%:*}.log" 2>&1 &
  PID=$!
  bench_track "$PID"
  wait_listen "$PORT" || { cat "$TMPD/server-${1%%:*}.log"; die "the demo did not start ($1)"; }
  local body
  body=$(curl -s -m 5 "http://127.0.0.1:$PORT/") || die "no answer ($1)"
  case $body in "visit 1 of session"*) ;; *) die "unexpected answer ($1): $body" ;; esac
}

log "duration ${DURATION}s, connections $CONNS; $(machine_desc)"
serve memory
HELLO=$(run_wrk "$PORT" /hello hello)
MEM=$(run_wrk "$PORT" / memory)
stop_pid "$PID"
serve "sqlite:$TMPD/sessions.db"
HELLO2=$(run_wrk "$PORT" /hello hello-2)
SQL=$(run_wrk "$PORT" / sqlite)
ROWS=$(command -v sqlite3 >/dev/null && sqlite3 "$TMPD/sessions.db" 'SELECT count(*) FROM spindle_sessions' 2>/dev/null || echo "?")
stop_pid "$PID"
HELLO_MED=$(printf '%s\n%s\n' "$HELLO" "$HELLO2" | median)

MD=$OUT.md
{
  echo "### sessions $(date -u +%Y-%m-%dT%H:%MZ)$([ "$SMOKE" = 1 ] && echo ' (smoke: no target judged)')"
  echo
  echo "Machine: $(machine_desc). examples/sessions (one process) on CPU 0, wrk -t1 -c$CONNS on CPU 1, ${DURATION} s per run; no cookie sent, so every request makes, fills and stores a new session (SQLite: $ROWS sessions stored)."
  echo
  echo "| workload | req/s | ÷ hello world |"
  echo "|---|---:|---:|"
  printf '| hello world (GET /hello; runs %s, %s) | %.0f | 1.000 |\n' "$HELLO" "$HELLO2" "$HELLO_MED"
  printf '| new session per request, memory store | %.0f | %s |\n' "$MEM" "$(ratio "$MEM" "$HELLO_MED")"
  printf '| new session per request, SQLite store (WAL) | %.0f | %s |\n' "$SQL" "$(ratio "$SQL" "$HELLO_MED")"
  if [ "$SMOKE" != 1 ]; then
    echo
    r=$(ratio "$SQL" "$HELLO_MED")
    echo "Target (issue 9): SQLite ≥ 0.30× hello world: $r× — $(awk -v r="$r" 'BEGIN { print (r >= 0.30 ? "met" : "NOT met") }')."
  fi
} >"$MD"
[ "$FAIL" = 1 ] && echo "**A run saw non-2xx responses or socket errors.**" >>"$MD"
cat "$MD"
exit "$FAIL"
