#!/bin/bash
# soak_short.sh — the 60-second soak of make test: tests/soak/soak.py for 50 s
# of mixed load (keep-alive, close, pipelined, slow, uploads, hostile) on two
# workers, sampling RSS and fds every 5 s, warm-up 15 s. `make soak` runs the
# same driver for 30 minutes. Ends with "N passed, N failed".
. "$(dirname "$0")/lib/preamble.sh"

[ -x build/spindle ] || abort "build/spindle missing (make)"
counted timeout -k 5 90 "$PY" tests/soak/soak.py --duration "${SOAK_SECONDS:-50}" --sample 5 \
  --warmup "${SOAK_WARMUP:-15}" --workers 2
rc=$?
[ "$rc" -ge 124 ] && echo "soak_short: the driver did not finish (exit $rc)"
finish
