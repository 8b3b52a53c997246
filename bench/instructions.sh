#!/bin/bash
# bench/instructions.sh — user-space instructions per keep-alive request,
# exact and repeatable, for spindle and nginx: each server runs as a single
# process (spindle --workers 0; nginx with master_process off, daemon off)
# under valgrind --tool=callgrind, twice — once driven with
# `ab -k -c 10 -n N1` (2,000) and once with `-n N2` (12,000) — and
#
#     Ir/request = (Ir(N2) - Ir(N1)) / (N2 - N1)
#
# where Ir is the server's whole-run instruction count (startup, the 10
# connections and shutdown cancel out). Readiness is polled in the socket
# table, so no probe connection reaches the server. Also prints the same
# difference per function (the per-request hot path) for each server.
#
# usage: bench/instructions.sh [--smoke] [--n1 N] [--n2 N]
#   env: N1 (2000), N2 (12000), CONC (10), SMOKE=1 (N1=200, N2=1200),
#        SERVERS ("spindle nginx"), TOP (15), SPINDLE, NGINX, OUT
# Keeps the N2 callgrind profiles in bench/results/ for callgrind_annotate.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

SMOKE=${SMOKE:-0}
N1=${N1:-2000}
N2=${N2:-12000}
CONC=${CONC:-10}
TOP=${TOP:-15}
SERVERS=${SERVERS:-spindle nginx}
while [ $# -gt 0 ]; do
  case $1 in
    --smoke) SMOKE=1 ;;
    --n1) N1=$2; shift ;;
    --n2) N2=$2; shift ;;
    -h | --help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
  shift
done
if [ "$SMOKE" = 1 ]; then
  N1=200
  N2=1200
fi
OUT=${OUT:-$RESULTS/instructions$([ "$SMOKE" = 1 ] && echo -smoke)}

[ -x "$SPINDLE" ] || die "$SPINDLE not built (run make)"
command -v valgrind >/dev/null || die "valgrind not installed (scripts/deps.sh)"
command -v ab >/dev/null || die "ab (apache2-utils) not installed (scripts/deps.sh)"
bench_init

# total_ir FILE...: the Ir total over the callgrind output files.
total_ir() {
  local f v sum=0
  for f in "$@"; do
    # "totals:" when present (the sum over the file), else "summary:".
    v=$(awk '/^totals:/ {t = $2} /^summary:/ {s = $2} END {print (t != "" ? t : s)}' "$f")
    sum=$((sum + ${v:-0}))
  done
  echo "$sum"
}

# by_function FILE: "Ir<TAB>function" per function (self cost, inlined code
# folded into the function it is inlined in).
by_function() {
  callgrind_annotate --inclusive=no --auto=no --threshold=100 "$1" 2>/dev/null |
    awk '/file:function/ { on = 1; next }
      on && /^-+$/ { next }
      on && /^ *$/ && seen { on = 0 }
      on && /^ *[0-9,]+ +\( *[0-9.]+%\) +[^ ]/ {
      seen = 1
      ir = $1; gsub(",", "", ir)
      line = $0; sub(/^ *[0-9,]+ +\( *[0-9.]+%\) +/, "", line)
      sub(/ \[[^]]*\]$/, "", line)           # the [object]
      n = split(line, parts, ":"); fn = parts[n]
      s[fn] += ir }
      END { for (f in s) printf "%d\t%s\n", s[f], f }'
}

# run_one SERVER N: total Ir of one server run serving N keep-alive requests.
run_one() {
  local srv=$1 n=$2 port dir="$TMPD/$1-$2" pid cmd
  mkdir -p "$dir"
  port=$(free_port)
  if [ "$srv" = spindle ]; then
    cmd=("$SPINDLE" --bind "127.0.0.1:$port" --workers 0 --log-level warning)
  else
    write_nginx_conf "$dir" "$port" off 1024
    read -ra cmd < <(nginx_cmd "$dir")
  fi
  taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out.%p" \
    "${cmd[@]}" >"$dir/server.log" 2>&1 &
  pid=$!
  bench_track "$pid"
  wait_listen "$port" 60 || { cat "$dir/server.log" >&2; die "$srv did not start under valgrind"; }
  taskset -c 1 ab -k -c "$CONC" -n "$n" "http://127.0.0.1:$port/" >"$dir/ab.txt" 2>&1
  stop_pid "$pid" TERM
  local done failed ka
  done=$(awk '/^Complete requests:/ {print $3}' "$dir/ab.txt")
  failed=$(awk '/^Failed requests:/ {print $3}' "$dir/ab.txt")
  ka=$(awk '/^Keep-Alive requests:/ {print $3}' "$dir/ab.txt")
  if [ "$done" != "$n" ] || [ "$failed" != 0 ] || [ "$ka" != "$n" ] || grep -q '^Non-2xx' "$dir/ab.txt"; then
    cat "$dir/ab.txt" >&2
    die "$srv: ab -n $n did not complete $n keep-alive 2xx requests"
  fi
  ls "$dir"/callgrind.out.* >/dev/null 2>&1 || { cat "$dir/server.log" >&2; die "$srv: no callgrind output"; }
  total_ir "$dir"/callgrind.out.*
}

declare -A PER
MD=$OUT.md
CSV=$OUT.csv
echo "server,n1,n2,ir_n1,ir_n2,ir_per_request" >"$CSV"
for srv in $SERVERS; do
  ir1=$(run_one "$srv" "$N1") || exit 1
  ir2=$(run_one "$srv" "$N2") || exit 1
  per=$(awk -v a="$ir1" -v b="$ir2" -v n=$((N2 - N1)) 'BEGIN { printf "%.1f", (b - a) / n }')
  PER[$srv]=$per
  echo "$srv,$N1,$N2,$ir1,$ir2,$per" >>"$CSV"
  log "$srv: Ir($N1) = $ir1, Ir($N2) = $ir2, per request $per"
  # Keep the N2 profile; per-function difference over the two runs.
  cp "$(ls "$TMPD/$srv-$N2"/callgrind.out.* | head -1)" "$OUT.$srv.callgrind.out"
  by_function "$(ls "$TMPD/$srv-$N1"/callgrind.out.* | head -1)" >"$TMPD/$srv.f1"
  by_function "$(ls "$TMPD/$srv-$N2"/callgrind.out.* | head -1)" >"$TMPD/$srv.f2"
  awk -F'\t' -v n=$((N2 - N1)) -v tot="$per" '
    NR == FNR { a[$2] = $1; next }
    { d = ($1 - a[$2]) / n; if (d > 0.5) printf "%.1f\t%.1f\t%s\n", d, 100 * d / tot, $2 }' \
    "$TMPD/$srv.f1" "$TMPD/$srv.f2" | sort -t$'\t' -k1,1gr >"$OUT.$srv.functions.tsv"
done

{
  echo "### Instructions per keep-alive request $(date -u +%Y-%m-%dT%H:%MZ)$([ "$SMOKE" = 1 ] && echo ' (smoke: no targets judged)')"
  echo
  echo "valgrind --tool=callgrind, single-process server, ab -k -c $CONC; (Ir(n=$N2) − Ir(n=$N1)) / $((N2 - N1)). Machine: $(machine_desc)."
  echo
  echo "| server | Ir (n=$N1) | Ir (n=$N2) | Ir / request | ÷ nginx |"
  echo "|---|---:|---:|---:|---:|"
  awk -F, -v ng="${PER[nginx]:-0}" 'NR > 1 {
    r = (ng > 0 ? sprintf("%.3f", $6 / ng) : "-")
    printf "| %s | %d | %d | %.1f | %s |\n", $1, $4, $5, $6, r }' "$CSV"
  if [ "$SMOKE" != 1 ] && [ -n "${PER[nginx]:-}" ] && [ -n "${PER[spindle]:-}" ]; then
    echo
    awk -v s="${PER[spindle]}" -v n="${PER[nginx]}" 'BEGIN {
      printf "Target (issue 6): ≤ 0.5× nginx: %.3f× — %s\n", s / n, (s / n <= 0.5 ? "met" : "NOT met") }'
  fi
  for srv in $SERVERS; do
    echo
    echo "Top $TOP functions per request, $srv (self Ir, inlined code folded into its caller):"
    echo
    echo "| Ir / request | share | function |"
    echo "|---:|---:|---|"
    head -"$TOP" "$OUT.$srv.functions.tsv" | awk -F'\t' '{printf "| %s | %s%% | %s |\n", $1, $2, $3}'
  done
} >"$MD"
cat "$MD"
echo
echo "results: $MD $CSV $OUT.*.functions.tsv $OUT.*.callgrind.out"
