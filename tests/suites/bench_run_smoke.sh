#!/bin/bash
# bench_run_smoke.sh — runs the `make bench` harness (bench/run) in smoke
# mode on spindle-c, the WSGI binding and nginx, every workload with 1 s runs
# and small counts, PostgreSQL included, and checks what it writes to
# bench/results/smoke/: runs.csv and summary.csv parse with numbers where
# there must be numbers, spindle's runs saw no errors, bench.md has a table
# per workload and the servers table, every chart is a PNG. Also checks that
# bad options are refused. Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."

pass=0
fail=0
ok() { echo "ok: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

PY=/usr/bin/python3
missing=""
for t in wrk ab taskset valgrind; do command -v "$t" >/dev/null || missing="$missing $t"; done
[ -x build/spindle ] || missing="$missing build/spindle"
ls build/python/spindle/_spindle*.so >/dev/null 2>&1 || missing="$missing build/python/spindle"
for m in matplotlib mako sqlalchemy psycopg2 web; do "$PY" -c "import $m" 2>/dev/null || missing="$missing python3:$m"; done
if [ -n "$missing" ]; then
  echo "missing:$missing (make; scripts/deps.sh)"
  echo "0 passed, 1 failed"
  exit 1
fi

R=bench/results/smoke
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
rm -rf "$R"

start=$SECONDS
# Bounded: smoke runs take about a minute; 600 s means it hung.
if timeout 600 "$PY" bench/run --smoke --servers spindle-c,spindle,nginx --apps hello,ip,mako,sqlite,pg,mako-pg \
  --scaling-servers spindle-c,nginx --max-workers 1 >"$log/out" 2>&1; then
  ok "bench/run --smoke ran ($((SECONDS - start)) s)"
else
  bad "bench/run --smoke exited non-zero ($((SECONDS - start)) s)"
  tail -40 "$log/out"
fi
grep '^# NOTE' "$log/out" | sed 's/^# NOTE: /note: /'

# The files, checked by Python's csv module.
if "$PY" - "$R" <<'PYEOF'; then ok "runs.csv and summary.csv parse and hold every workload"; else bad "CSV checks (above)"; fi
import csv, sys
R = sys.argv[1]
runs = list(csv.DictReader(open(R + "/runs.csv")))
summ = list(csv.DictReader(open(R + "/summary.csv")))
problems = []
want = {"keepalive", "close", "latency", "memory", "wsgi", "static", "scaling", "instructions"}
seen = {r["workload"] for r in runs}
if want - seen:
    problems.append("workloads missing from runs.csv: %s" % sorted(want - seen))
for r in runs:
    wl, srv = r["workload"], r["server"]
    if wl in ("keepalive", "close", "latency", "wsgi", "static", "scaling"):
        if not (float(r["requests"]) > 0 and float(r["requests_per_s"]) > 0 and float(r["server_cpu_us_per_request"]) > 0):
            problems.append("%s/%s/%s: no throughput figures: %s" % (wl, r["variant"], srv, r))
        if srv.startswith("spindle") and (int(r["errors"]) or int(r["non2xx"])):
            problems.append("%s/%s/%s saw errors: %s" % (wl, r["variant"], srv, r))
        if not 0 <= float(r["loadgen_cpu_pct"]) <= 200:
            problems.append("%s/%s/%s: load generator CPU %s" % (wl, r["variant"], srv, r["loadgen_cpu_pct"]))
    if wl in ("keepalive", "latency") and not float(r["p99_ms"]) >= float(r["p50_ms"]) > 0:
        problems.append("%s/%s: latency percentiles out of order: %s %s" % (wl, srv, r["p50_ms"], r["p99_ms"]))
    if wl == "memory" and srv.startswith("spindle") and int(r["held_open"]) != int(r["connections"]):
        problems.append("memory/%s held %s of %s" % (srv, r["held_open"], r["connections"]))
    if wl == "instructions" and not float(r["instructions_per_request"]) > 100:
        problems.append("instructions/%s: %s" % (srv, r["instructions_per_request"]))
apps = {r["variant"] for r in runs if r["workload"] == "wsgi" and r["server"] == "spindle"}
if apps != {"ip", "mako", "sqlite", "pg", "mako-pg"}:
    problems.append("WSGI apps measured on spindle: %s" % sorted(apps))
for s in summ:
    if s["workload"] not in ("memory", "instructions") and not float(s["rps_median"]) > 0:
        problems.append("summary %s/%s/%s has no median" % (s["workload"], s["variant"], s["server"]))
if not any(s["workload"] == "wsgi" and s["variant"] == "hello" for s in summ):
    problems.append("summary: no WSGI hello row")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
PYEOF

md=$R/bench.md
for h in "## Servers" "## Hello world, keep-alive" "## Hello world without keep-alive" "## Latency at a fixed rate" \
  "## Memory per idle" "## WSGI applications" "## Static files" "## Scaling with workers" "## User-space instructions"; do
  if grep -q "^$h" "$md" 2>/dev/null; then ok "bench.md: $h"; else bad "bench.md lacks '$h'"; fi
done
if grep -q '^Load: build/bench/pace, open loop' "$md" 2>/dev/null; then
  ok "bench.md: the latency runs used the open-loop generator"
else
  bad "bench.md: the latency runs did not use build/bench/pace"
fi
if grep -q '^| c=50 | \*\*spindle-c\*\* | [0-9,]* (' "$md" 2>/dev/null; then ok "bench.md: keep-alive row for spindle-c"; else bad "bench.md: no keep-alive row for spindle-c"; fi
for c in keepalive keepalive-cpu close close-cpu latency memory wsgi static static-cpu scaling instructions; do
  if [ "$(head -c 8 "$R/$c.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
    grep -q "($c.png)" "$md"; then
    ok "$c.png is a PNG, shown in bench.md"
  else
    bad "$c.png missing, not a PNG, or not in bench.md"
  fi
done

# Bad options: refused with a message naming the choices, exit status 2.
out=$("$PY" bench/run --smoke --workloads nosuch 2>&1)
if [ $? = 2 ] && echo "$out" | grep -q "unknown workload(s) nosuch: choose from keepalive"; then
  ok "an unknown workload is refused"
else
  bad "unknown workload: $out"
fi
out=$("$PY" bench/run --smoke --servers apache 2>&1)
if [ $? = 2 ] && echo "$out" | grep -q "unknown server(s) apache"; then ok "an unknown server is refused"; else bad "unknown server: $out"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
