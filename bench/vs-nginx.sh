#!/bin/bash
# bench/vs-nginx.sh — spindle's C server (1 worker) against nginx (1 worker)
# on the hello world, keep-alive (wrk) and a connection per request (ab), 100
# connections: a thin call of the harness,
#
#     bench/run --servers spindle-c,nginx --workloads keepalive,close --connections 100
#
# which also judges issue 6's targets (req/s ≥ 0.95× nginx, CPU/req ≤ 1.0×
# nginx; paired per-round ratios beside the medians) in bench.md and
# targets.csv. Results: bench/results/vs-nginx/ (smoke: vs-nginx-smoke/).
#
# usage: bench/vs-nginx.sh [--smoke] [--duration SEC] [--rounds N] [--connections N] [other bench/run options]
#   env: DURATION, ROUNDS, CONNS (100), SMOKE=1, ACCESS_LOG=1 (both servers
#        write a combined-format access log: --access-log), SPINDLE, NGINX,
#        OUT (results directory), PY (build/venv/bin/python)
# Exits non-zero if spindle saw an error or a non-2xx answer (bench/run).
set -euo pipefail
cd "$(dirname "$0")/.."
args=(--no-install --servers spindle-c,nginx --workloads keepalive,close --connections "${CONNS:-100}")
smoke=${SMOKE:-0}
rest=()
for a in "$@"; do if [ "$a" = --smoke ]; then smoke=1; else rest+=("$a"); fi; done
[ "$smoke" = 1 ] && args+=(--smoke)
[ -n "${DURATION:-}" ] && args+=(--duration "$DURATION")
[ -n "${ROUNDS:-}" ] && args+=(--rounds "$ROUNDS")
[ "${ACCESS_LOG:-0}" = 1 ] && args+=(--access-log)
args+=(--out "${OUT:-bench/results/vs-nginx$([ "$smoke" = 1 ] && echo -smoke)}")
exec "${PY:-build/venv/bin/python}" bench/run "${args[@]}" "${rest[@]}"
