#!/bin/bash
# soak_short.sh — the 60-second soak of make test: tests/soak/soak.py for 50 s
# of mixed load (keep-alive, close, pipelined, slow, uploads, hostile) on two
# workers, sampling RSS and fds every 5 s, warm-up 15 s. `make soak` runs the
# same driver for 30 minutes. Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ ! -x build/spindle ]; then
  echo "soak_short: build/spindle missing (make)"
  echo "0 passed, 1 failed"
  exit 1
fi
timeout -k 5 90 /usr/bin/python3 tests/soak/soak.py --duration "${SOAK_SECONDS:-50}" --sample 5 \
  --warmup "${SOAK_WARMUP:-15}" --workers 2
rc=$?
if [ "$rc" -ge 124 ]; then
  echo "soak_short: the driver did not finish (exit $rc)"
  echo "0 passed, 1 failed"
fi
exit "$rc"
