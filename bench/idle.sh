#!/bin/bash
# bench/idle.sh — memory (RSS and PSS of the whole process tree) of spindle's
# C server (1 worker) and of nginx (1 worker) holding N (10,000) idle
# keep-alive connections, each after one request: a thin call of the harness,
#
#     bench/run --servers spindle-c,nginx --workloads memory --idle-connections 10000
#
# which also judges issue 6's target (10,000 idle connections in ≤ 40 MB)
# in bench.md and targets.csv. Results: bench/results/idle/ (smoke:
# idle-smoke/, 200 connections).
#
# usage: bench/idle.sh [--smoke] [--connections N] [other bench/run options]
#   env: CONNS (10000), SMOKE=1, SERVERS ("spindle nginx"; spindle is the C
#        server), SPINDLE, NGINX, OUT, PY
set -euo pipefail
cd "$(dirname "$0")/.."
smoke=${SMOKE:-0}
conns=${CONNS:-}
rest=()
while [ $# -gt 0 ]; do
  case $1 in
    --smoke) smoke=1 ;;
    --connections) conns=$2; shift ;;
    *) rest+=("$1") ;;
  esac
  shift
done
[ -n "$conns" ] || conns=$([ "$smoke" = 1 ] && echo 200 || echo 10000)
servers=$(echo "${SERVERS:-spindle nginx}" | sed 's/\bspindle\b/spindle-c/g; s/ \+/,/g')
args=(--no-install --servers "$servers" --workloads memory --idle-connections "$conns")
[ "$smoke" = 1 ] && args+=(--smoke)
args+=(--out "${OUT:-bench/results/idle$([ "$smoke" = 1 ] && echo -smoke)}")
exec "${PY:-build/venv/bin/python}" bench/run "${args[@]}" "${rest[@]}"
