#!/bin/bash
# bench/instructions.sh — user-space instructions per keep-alive request,
# exact and repeatable, for spindle's C server and nginx: each runs under
# valgrind --tool=callgrind twice, driven by `ab -k -c 10 -n N1` (2,000) and
# `-n N2` (12,000); (Ir(N2) − Ir(N1)) / (N2 − N1), and the same per function
# (the hot path). A thin call of the harness,
#
#     bench/run --servers spindle-c,nginx --workloads instructions --instruction-requests 2000,12000
#
# which also judges issue 6's target (≤ 0.5× nginx) in bench.md and
# targets.csv, and keeps instructions.SERVER.functions.tsv and the N2
# profile instructions.SERVER.callgrind.out. Results:
# bench/results/instructions/ (smoke: instructions-smoke/, N1 200, N2 1,200).
#
# usage: bench/instructions.sh [--smoke] [--n1 N] [--n2 N] [other bench/run options]
#   env: N1, N2, SMOKE=1, SERVERS ("spindle nginx"; spindle is the C server;
#        also spindle-c, and any bench/run server), SPINDLE, NGINX, OUT, PY,
#        PRINT=1 (print the bench/run command instead of running it)
set -euo pipefail
cd "$(dirname "$0")/.."
smoke=${SMOKE:-0}
n1=${N1:-}
n2=${N2:-}
rest=()
while [ $# -gt 0 ]; do
  case $1 in
    --smoke) smoke=1 ;;
    --n1) n1=$2; shift ;;
    --n2) n2=$2; shift ;;
    *) rest+=("$1") ;;
  esac
  shift
done
if [ "$smoke" = 1 ]; then n1=${n1:-200} n2=${n2:-1200}; else n1=${n1:-2000} n2=${n2:-12000}; fi
# The word "spindle" alone means the C server; every other name (spindle-c,
# spindle-c-uring, ...) is passed as it is, not rewritten inside.
servers=
for s in ${SERVERS:-spindle nginx}; do
  [ "$s" = spindle ] && s=spindle-c
  servers=${servers:+$servers,}$s
done
args=(--no-install --servers "$servers" --instruction-servers "$servers" --workloads instructions
  --instruction-requests "$n1,$n2")
[ "$smoke" = 1 ] && args+=(--smoke)
args+=(--out "${OUT:-bench/results/instructions$([ "$smoke" = 1 ] && echo -smoke)}")
if [ "${PRINT:-0}" = 1 ]; then
  echo bench/run "${args[@]}" "${rest[@]}"
  exit 0
fi
exec "${PY:-build/venv/bin/python}" bench/run "${args[@]}" "${rest[@]}"
