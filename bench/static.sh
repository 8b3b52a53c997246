#!/bin/bash
# bench/static.sh — static files: spindle's C server (--root DIR, 1 worker)
# against nginx (1 worker, root at the same directory, sendfile on) on a
# 1 KiB and a 1 MiB file, wrk keep-alive, 50 connections: a thin call of
# the harness,
#
#     bench/run --servers spindle-c,nginx --workloads static --connections 50
#
# which also judges issue 7's target (req/s ≥ 1.0× nginx for both files) in
# bench.md and targets.csv. Results: bench/results/static/ (smoke:
# static-smoke/).
#
# usage: bench/static.sh [--smoke] [--duration SEC] [--rounds N] [--connections N] [other bench/run options]
#   env: DURATION, ROUNDS, CONNS (50), SMOKE=1, SPINDLE, NGINX, OUT, PY
# Exits non-zero if spindle saw an error or a non-2xx answer (bench/run).
set -euo pipefail
cd "$(dirname "$0")/.."
args=(--no-install --servers spindle-c,nginx --workloads static --connections "${CONNS:-50}")
smoke=${SMOKE:-0}
rest=()
for a in "$@"; do if [ "$a" = --smoke ]; then smoke=1; else rest+=("$a"); fi; done
[ "$smoke" = 1 ] && args+=(--smoke)
[ -n "${DURATION:-}" ] && args+=(--duration "$DURATION")
[ -n "${ROUNDS:-}" ] && args+=(--rounds "$ROUNDS")
args+=(--out "${OUT:-bench/results/static$([ "$smoke" = 1 ] && echo -smoke)}")
exec "${PY:-build/venv/bin/python}" bench/run "${args[@]}" "${rest[@]}"
