#!/bin/bash
# bench_smoke.sh — runs the three benchmarks (bench/vs-nginx.sh,
# bench/instructions.sh, bench/idle.sh) once each in smoke mode (1 s runs,
# small counts; no targets judged) so they keep working, and checks the
# files each writes to bench/results/ exist and parse. Needs build/spindle
# (make), nginx, wrk, ab, valgrind. Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."

pass=0
fail=0
ok() { echo "ok: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

missing=""
for t in nginx wrk ab valgrind callgrind_annotate taskset curl ss; do
  command -v "$t" >/dev/null || [ -x "/usr/sbin/$t" ] || missing="$missing $t"
done
if [ ! -x build/spindle ]; then missing="$missing build/spindle"; fi
if [ -n "$missing" ]; then
  echo "missing:$missing (make; scripts/deps.sh)"
  echo "0 passed, 1 failed"
  exit 1
fi

R=bench/results
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# run NAME SCRIPT: runs SCRIPT --smoke, counts its exit status.
run() {
  local name=$1 start=$SECONDS
  shift
  if "$@" --smoke >"$log/$name.out" 2>&1; then
    ok "$name ran ($((SECONDS - start)) s)"
  else
    bad "$name exited non-zero ($((SECONDS - start)) s)"
    tail -30 "$log/$name.out"
  fi
}

# csv_check FILE HEADER_PREFIX MIN_ROWS AWK_COND: FILE exists, starts with
# HEADER_PREFIX, has at least MIN_ROWS data rows and every row satisfies
# AWK_COND (fields split on commas).
csv_check() {
  local f=$1 hdr=$2 rows=$3 cond=$4
  if [ ! -s "$f" ]; then
    bad "$f missing"
    return
  fi
  if ! head -1 "$f" | grep -q "^$hdr"; then
    bad "$f: header is not $hdr..."
    return
  fi
  local n
  n=$(awk -F, "NR > 1 && ($cond) {n++} END {print n + 0}" "$f")
  local all=$(($(wc -l <"$f") - 1))
  if [ "$all" -ge "$rows" ] && [ "$n" = "$all" ]; then
    ok "$f: $all rows parse"
  else
    bad "$f: $n of $all rows valid (want ≥ $rows)"
    cat "$f"
  fi
}

md_check() {
  if [ -s "$1" ] && grep -q '^| ' "$1"; then ok "$1 has a table"; else bad "$1 missing or has no table"; fi
}

num='^[0-9]+([.][0-9]+)?$'

run vs-nginx bench/vs-nginx.sh
csv_check $R/vs-nginx-smoke-runs.csv round,workload,server 4 \
  "\$5 > 0 && \$6 ~ /$num/ && \$6 > 0 && \$8 ~ /$num/ && \$9 == 0"
csv_check $R/vs-nginx-smoke-summary.csv workload,server 4 \
  "(\$2 == \"spindle\" || \$2 == \"nginx\") && \$4 > 0 && \$5 > 0 && \$6 ~ /$num/"
md_check $R/vs-nginx-smoke.md

run instructions bench/instructions.sh
csv_check $R/instructions-smoke.csv server,n1,n2 2 \
  "\$5 > \$4 && \$6 ~ /$num/ && \$6 > 100"
md_check $R/instructions-smoke.md

run idle bench/idle.sh
csv_check $R/idle-smoke.csv server,connections 2 \
  "\$2 == 200 && \$6 > 0 && \$7 > 0 && \$10 == 200"
md_check $R/idle-smoke.md

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
