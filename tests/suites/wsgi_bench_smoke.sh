#!/bin/bash
# wsgi_bench_smoke.sh — runs bench/wsgi.sh in smoke mode (1 s runs, 1 round;
# only the peers already installed: smoke mode never installs anything) and
# checks the files it writes to bench/results/ parse: every run row has
# requests and numeric figures, spindle's rows saw no errors, the summary has
# spindle for every app that ran, the Markdown has its tables. Needs the
# binding (make python), wrk, curl, ss, taskset; nginx, build/spindle and the
# Python peers (gunicorn, uwsgi, gevent, eventlet, web.py, Flask) are used
# when present. Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."

pass=0
fail=0
ok() { echo "ok: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

missing=""
for t in wrk taskset curl ss; do
  command -v "$t" >/dev/null || missing="$missing $t"
done
ls build/python/spindle/_spindle*.so >/dev/null 2>&1 || missing="$missing build/python/spindle (make python)"
if [ -n "$missing" ]; then
  echo "missing:$missing (make; scripts/deps.sh)"
  echo "0 passed, 1 failed"
  exit 1
fi

R=bench/results
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

start=$SECONDS
if NO_INSTALL=1 bench/wsgi.sh --smoke >"$log/out" 2>&1; then
  ok "bench/wsgi.sh --smoke ran ($((SECONDS - start)) s)"
else
  bad "bench/wsgi.sh --smoke exited non-zero ($((SECONDS - start)) s)"
  tail -40 "$log/out"
fi
grep '^# skipped' "$log/out" | sed 's/^# /note: /'

num='^[0-9]+([.][0-9]+)?$'
runs=$R/wsgi-smoke-runs.csv
summary=$R/wsgi-smoke-summary.csv
md=$R/wsgi-smoke.md

if [ -s "$runs" ] && head -1 "$runs" | grep -q '^round,app,workload,server,'; then
  all=$(($(wc -l <"$runs") - 1))
  good=$(awk -F, -v num="$num" 'NR > 1 && $6 > 0 && $7 ~ num && $7 > 0 && $9 ~ num {n++} END {print n + 0}' "$runs")
  if [ "$all" -ge 3 ] && [ "$good" = "$all" ]; then ok "$runs: $all rows parse"; else bad "$runs: $good of $all rows valid"; cat "$runs"; fi
  sp_err=$(awk -F, 'NR > 1 && ($4 == "spindle" || $4 == "spindle-c" || $4 == "nginx") && ($10 + $11 + $12 + $13 + $14) > 0' "$runs")
  if [ -z "$sp_err" ]; then ok "spindle, spindle-c and nginx runs saw no errors"; else bad "errors in: $sp_err"; fi
  for wl in keepalive close; do
    if awk -F, -v w="$wl" 'NR > 1 && $2 == "hello" && $3 == w && $4 == "spindle" {f = 1} END {exit !f}' "$runs"; then
      ok "hello $wl on spindle measured"
    else
      bad "no hello $wl run on spindle"
    fi
  done
else
  bad "$runs missing or without its header"
fi

if [ -s "$summary" ] && head -1 "$summary" | grep -q '^app,workload,server,runs,'; then
  apps=$(awk -F, 'NR > 1 {print $1}' "$summary" | sort -u | tr '\n' ' ')
  missing_sp=""
  for a in $apps; do
    awk -F, -v a="$a" 'NR > 1 && $1 == a && $3 == "spindle" && $5 > 0 && $6 > 0 {f = 1} END {exit !f}' "$summary" ||
      missing_sp="$missing_sp $a"
  done
  if [ -z "$missing_sp" ]; then ok "$summary: spindle figures for $apps"; else bad "$summary: no spindle figures for$missing_sp"; fi
else
  bad "$summary missing or without its header"
fi

if [ -s "$md" ] && grep -q '^| keepalive | spindle |' "$md" && grep -q '^#### hello' "$md"; then
  ok "$md has the tables"
else
  bad "$md missing or has no table"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
