#!/bin/bash
# bench/wsgi.sh — spindle's WSGI binding (python3 -m spindle, 1 worker)
# against the Python WSGI servers from Debian's packages (gunicorn sync and
# gevent, uWSGI, gevent, eventlet, wsgiref) and the C references (nginx,
# spindle's C server) on the seed hello world, keep-alive (wrk) and a
# connection per request (ab), 100 connections; then web.py's "your IP" app
# and a Flask app on every WSGI server. A thin call of the harness,
#
#     bench/run --workloads keepalive,close,wsgi --connections 100 --apps hello,ip,flask \
#       --servers spindle,spindle-c,nginx,uwsgi,gunicorn-sync,gunicorn-gevent,gevent,eventlet,wsgiref
#
# which also judges issue 8's targets (req/s ≥ 0.9× nginx, ≥ 4× uWSGI,
# ≥ 10× gunicorn sync; CPU/req ≤ 2× spindle-c) in bench.md and targets.csv.
# Peers that are not installed are skipped and named; as root (not in smoke
# mode, not with NO_INSTALL=1) bench/run first installs the missing ones.
# Results: bench/results/wsgi/ (smoke: wsgi-smoke/).
#
# usage: bench/wsgi.sh [--smoke] [--duration SEC] [--rounds N] [--connections N] [other bench/run options]
#   env: DURATION, ROUNDS, CONNS (100), SMOKE=1, SERVERS (space-separated),
#        APPS ("hello webpy flask"; webpy is bench/run's ip), NO_INSTALL=1,
#        SPINDLE_PY (dir holding the spindle package), SPINDLE, NGINX, OUT, PY
# Exits non-zero if spindle or spindle-c saw an error or a non-2xx answer.
set -euo pipefail
cd "$(dirname "$0")/.."
servers=${SERVERS:-spindle spindle-c nginx uwsgi gunicorn-sync gunicorn-gevent gevent eventlet wsgiref}
apps=$(echo "${APPS:-hello webpy flask}" | sed 's/\bwebpy\b/ip/g')
args=(--servers "${servers// /,}" --workloads keepalive,close,wsgi --apps "${apps// /,}"
  --connections "${CONNS:-100}")
smoke=${SMOKE:-0}
rest=()
for a in "$@"; do if [ "$a" = --smoke ]; then smoke=1; else rest+=("$a"); fi; done
[ "$smoke" = 1 ] && args+=(--smoke)
[ -n "${NO_INSTALL:-}" ] && args+=(--no-install)
[ -n "${DURATION:-}" ] && args+=(--duration "$DURATION")
[ -n "${ROUNDS:-}" ] && args+=(--rounds "$ROUNDS")
args+=(--out "${OUT:-bench/results/wsgi$([ "$smoke" = 1 ] && echo -smoke)}")
exec "${PY:-build/venv/bin/python}" bench/run "${args[@]}" "${rest[@]}"
