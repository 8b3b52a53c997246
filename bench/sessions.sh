#!/bin/bash
# bench/sessions.sh — Eurasia's session test: the session demo
# (examples/sessions.c, one process) with a new session per request — wrk
# sends no cookie, so every request makes a session, sets its counter and
# stores it — for the memory and SQLite stores, beside the plain hello world
# served by the same program (GET /hello). A thin call of the harness,
#
#     bench/run --servers spindle-c --workloads sessions --connections 100 --duration 10 --rounds 1
#
# which also judges issue 9's target (the SQLite store keeps ≥ 30 % of the
# hello world's requests/s) in bench.md and targets.csv. Results:
# bench/results/sessions/ (smoke: sessions-smoke/, 1 s runs).
#
# usage: bench/sessions.sh [--smoke] [other bench/run options]
#   env: DURATION (10), ROUNDS (1), CONNS (100), SMOKE=1, OUT, PY
# Exits non-zero if a run saw an error or a non-2xx answer (bench/run).
set -euo pipefail
cd "$(dirname "$0")/.."
smoke=${SMOKE:-0}
rest=()
for a in "$@"; do if [ "$a" = --smoke ]; then smoke=1; else rest+=("$a"); fi; done
args=(--no-install --servers spindle-c --workloads sessions --connections "${CONNS:-100}")
if [ "$smoke" = 1 ]; then
  args+=(--smoke)
else
  args+=(--duration "${DURATION:-10}" --rounds "${ROUNDS:-1}")
fi
args+=(--out "${OUT:-bench/results/sessions$([ "$smoke" = 1 ] && echo -smoke)}")
exec "${PY:-build/venv/bin/python}" bench/run "${args[@]}" "${rest[@]}"
