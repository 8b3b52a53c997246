#!/bin/bash
# bench/parked.sh — 10,000 long-polling clients and 10,000 open WebSockets
# parked on one spindle process (examples/chat, one loop), with a broadcast
# (the chat's "online" announcement) every second: resident memory per
# connection (RSS and PSS, before and with the clients) and the time to
# deliver one broadcast to all; polling only, WebSockets only and both at
# once, with and without --no-guard-pages, and the same beside uvicorn
# (bench/peers/uvicorn_parked.py, from build/venv; not in smoke runs). A thin
# call of the harness,
#
#     bench/run --servers spindle-c --workloads parked --parked-clients 10000
#
# Results: bench/results/parked/ (smoke: parked-smoke/, 100 clients of each
# kind, the mixed phase only).
#
# usage: bench/parked.sh [--smoke] [other bench/run options]
#   env: SMOKE=1, CLIENTS (10000 of each kind), SECONDS_RUN (10 s of
#        broadcasts per phase), OUT, PY
set -euo pipefail
cd "$(dirname "$0")/.."
smoke=${SMOKE:-0}
rest=()
for a in "$@"; do if [ "$a" = --smoke ]; then smoke=1; else rest+=("$a"); fi; done
args=(--no-install --servers spindle-c --workloads parked)
[ "$smoke" = 1 ] && args+=(--smoke)
[ -n "${CLIENTS:-}" ] && args+=(--parked-clients "$CLIENTS")
[ -n "${SECONDS_RUN:-}" ] && args+=(--parked-seconds "$SECONDS_RUN")
args+=(--out "${OUT:-bench/results/parked$([ "$smoke" = 1 ] && echo -smoke)}")
exec "${PY:-build/venv/bin/python}" bench/run "${args[@]}" "${rest[@]}"
