#!/bin/bash
# bench_run_smoke.sh — the one benchmark smoke suite of `make test`: runs
# the benchmark harness (bench/run) in smoke mode on spindle-c, the WSGI
# binding and nginx, every workload with 1 s runs and small counts,
# PostgreSQL, strace, the session demo, the chat's parked clients and TLS (spindle-c and nginx) included,
# and checks what it writes to
# bench/results/smoke/: runs.csv and summary.csv parse with numbers where
# there must be numbers, spindle's and nginx's runs saw no errors, every
# workload ran on spindle-c (and the hello-world ones on the binding),
# targets.csv holds the issues' targets with figures (not judged in smoke
# mode), the instructions hot path is listed per function, bench.md has a
# table per workload and the servers table, every chart is a PNG. Then the
# asgi workload on spindle and uvicorn (every variant measured, issue 17's
# targets with figures, bench.md's ASGI section and chart), and the page
# workload on spindle-c and nginx (headless Chromium, when installed). Then runs
# one of the thin wrapper scripts (bench/idle.sh --smoke) and checks it
# reached bench/run with its options, that bench/instructions.sh passes its
# SERVERS through word by word, and that bad options are refused.
# Needs build/spindle, the binding, build/examples/sessions and chat (make),
# wrk, ab, taskset, valgrind, nginx and the Python modules below. Ends with
# "N passed, N failed".
. "$(dirname "$0")/lib/preamble.sh"

missing=""
for t in wrk ab taskset valgrind callgrind_annotate strace openssl; do command -v "$t" >/dev/null || missing="$missing $t"; done
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing="$missing nginx"
[ -x build/spindle ] || missing="$missing build/spindle"
[ -x build/examples/sessions ] || missing="$missing build/examples/sessions"
[ -x build/examples/chat ] || missing="$missing build/examples/chat"
[ -x build/bench/ws_echo ] || missing="$missing build/bench/ws_echo"
ls build/python/spindle/_spindle*.so >/dev/null 2>&1 || missing="$missing build/python/spindle"
for m in matplotlib mako sqlalchemy psycopg2 web flask uvicorn httptools uvloop fastapi; do "$PY" -c "import $m" 2>/dev/null || missing="$missing python3:$m"; done
[ -n "$missing" ] && abort "missing:$missing (make; scripts/deps.sh)"

R=bench/results/smoke
log=$work
rm -rf "$R"

# smoke_run LABEL SECS OUT LINES ARGS...: bench/run --smoke ARGS, bounded by
# SECS, its output in OUT; ok, or bad with OUT's last LINES lines.
smoke_run() {
  local label=$1 secs=$2 out=$3 lines=$4 t0=$SECONDS
  shift 4
  if timeout "$secs" "$PY" bench/run --smoke "$@" >"$out" 2>&1; then
    ok "bench/run --smoke${label} ran ($((SECONDS - t0)) s)"
  else
    bad "bench/run --smoke${label} exited non-zero ($((SECONDS - t0)) s)"
    tail -"$lines" "$out"
  fi
}

# Bounded: smoke runs take about a minute; 600 s means it hung.
smoke_run "" 600 "$log/out" 40 --servers spindle-c,spindle,nginx --apps hello,ip,mako,sqlite,pg,mako-pg,flask \
  --workloads keepalive,close,latency,memory,wsgi,static,scaling,instructions,syscalls,sessions,parked,tls,h2 \
  --scaling-servers spindle-c,nginx --max-workers 1 --syscall-servers spindle-c
grep '^# NOTE' "$log/out" | sed 's/^# NOTE: /note: /'

# The files, checked by Python's csv module.
if "$PY" - "$R" <<'PYEOF'; then ok "runs.csv and summary.csv parse and hold every workload"; else bad "CSV checks (above)"; fi
import csv, sys
R = sys.argv[1]
runs = list(csv.DictReader(open(R + "/runs.csv")))
summ = list(csv.DictReader(open(R + "/summary.csv")))
problems = []
want = {"keepalive", "close", "latency", "memory", "wsgi", "static", "scaling", "instructions", "syscalls", "sessions",
        "parked", "tls", "h2", "h2memory"}
seen = {r["workload"] for r in runs}
if want - seen:
    problems.append("workloads missing from runs.csv: %s" % sorted(want - seen))
for r in runs:
    wl, srv = r["workload"], r["server"]
    if wl in ("keepalive", "close", "latency", "wsgi", "static", "scaling", "sessions", "h2"):
        if not (float(r["requests"]) > 0 and float(r["requests_per_s"]) > 0 and float(r["server_cpu_us_per_request"]) > 0):
            problems.append("%s/%s/%s: no throughput figures: %s" % (wl, r["variant"], srv, r))
        # spindle's own runs fail bench/run; nginx is the reference the
        # targets are judged against, so its runs must be clean too.
        if (srv.startswith("spindle") or srv == "nginx") and (int(r["errors"]) or int(r["non2xx"])):
            problems.append("%s/%s/%s saw errors: %s" % (wl, r["variant"], srv, r))
        if not 0 <= float(r["loadgen_cpu_pct"]) <= 200:
            problems.append("%s/%s/%s: load generator CPU %s" % (wl, r["variant"], srv, r["loadgen_cpu_pct"]))
    if wl == "tls" and r["variant"].endswith(" idle"):
        if int(r["held_open"]) != int(r["connections"]) or not float(r["bytes_per_connection"]) > 0:
            problems.append("tls/%s/%s held %s of %s" % (r["variant"], srv, r["held_open"], r["connections"]))
    elif wl == "tls" and "strace" in r["variant"]:
        # keep-alive over TLS: a write and a read or two per request (the
        # smoke's fixed count), whichever server
        if not (float(r["requests"]) == 2000 and 1.5 <= float(r["syscalls_per_request"] or 0) <= 6):
            problems.append("tls/%s/%s: %s" % (r["variant"], srv, r["syscalls"]))
    elif wl == "tls" and "callgrind" in r["variant"]:
        if not float(r["instructions_per_request"]) > 100:
            problems.append("tls/%s/%s: %s" % (r["variant"], srv, r["instructions_per_request"]))
    elif wl == "tls":
        if not (float(r["requests"]) > 0 and float(r["server_cpu_us_per_request"]) > 0) or int(r["errors"]) \
                or int(r["non2xx"]) or r["note"]:
            problems.append("tls/%s/%s: %s" % (r["variant"], srv, r))
    if wl in ("keepalive", "latency") and not float(r["p99_ms"]) >= float(r["p50_ms"]) > 0:
        problems.append("%s/%s: latency percentiles out of order: %s %s" % (wl, srv, r["p50_ms"], r["p99_ms"]))
    if wl == "memory" and srv.startswith("spindle") and int(r["held_open"]) != int(r["connections"]):
        problems.append("memory/%s held %s of %s" % (srv, r["held_open"], r["connections"]))
    if wl == "parked" and srv == "spindle-c" and not (
            int(r["held_open"]) == int(r["connections"]) and int(r["client_errors"]) == 0
            and int(r["delivered_to_all"]) >= 1 and float(r["bytes_per_connection"]) > 0):
        problems.append("parked/%s: %s" % (r["variant"], r))
    # The WSGI row (bench/harness/py_parked.py): every WebSocket parked.
    if wl == "parked" and srv == "spindle" and not (
            r["variant"] == "100 WebSockets, WSGI spindle.websocket" and int(r["held_open"]) == 100
            and float(r["bytes_per_connection"]) > 0):
        problems.append("parked/%s: %s" % (r["variant"], r))
    if wl == "syscalls":
        calls = dict(kv.split("=") for kv in r["syscalls"].split())
        # keep-alive: about one read and one sendmsg per request; close: an
        # accept4 and a close per connection too; the smoke's fixed count.
        # On io_uring (the default where it can be set up) the sends and
        # closes go in the ring: io_uring_enter instead, at most one a request.
        uring = "io_uring_enter" in calls
        close = r["variant"] == "close"
        need = {"read"} | ({"accept4"} if close else set()) | (set() if uring else {"sendmsg"} | ({"close"} if close else set()))
        if not (float(r["requests"]) == 2000 and all(0.9 <= float(calls.get(c, 0)) <= 1.2 for c in need)
                and (not uring or (0 < float(calls["io_uring_enter"]) <= 1.2
                                   and float(calls.get("sendmsg", 0)) < 0.1))):
            problems.append("syscalls/%s/%s: %s" % (r["variant"], srv, r["syscalls"]))
    if wl == "instructions" and not float(r["instructions_per_request"]) > 100:
        problems.append("instructions/%s: %s" % (srv, r["instructions_per_request"]))
apps = {r["variant"] for r in runs if r["workload"] == "wsgi" and r["server"] == "spindle"}
if apps != {"ip", "mako", "sqlite", "pg", "mako-pg", "flask"}:
    problems.append("WSGI apps measured on spindle: %s" % sorted(apps))
# Every workload on the C server, the hello-world ones on the binding too.
for wl in want - {"wsgi"}:
    if not any(r["workload"] == wl and r["server"] == "spindle-c" for r in runs):
        problems.append("%s: no spindle-c run" % wl)
for wl in ("keepalive", "close", "latency", "memory", "instructions", "sessions"):
    if not any(r["workload"] == wl and r["server"] == "spindle" for r in runs):
        problems.append("%s: no run of the WSGI binding" % wl)
if len([r for r in runs if r["workload"] == "parked" and r["server"] == "spindle-c"]) != 2:
    problems.append("parked: want the mixed phase with and without guard pages")
if len([r for r in runs if r["workload"] == "parked" and r["server"] == "spindle"]) != 1:
    problems.append("parked: want one row of WebSockets parked in a WSGI handler")
if not any(r["workload"] == "instructions" and r["variant"] == "parse: 15-field request" for r in runs):
    problems.append("instructions: no parser row (bench/harness/parse_ir.py)")
tls = {(r["server"], r["variant"].split(" c=")[0].split(" (")[0]) for r in runs if r["workload"] == "tls"}
for srv in ("spindle-c", "nginx"):
    for v in ("keep-alive", "full handshake", "full handshake, sequential", "resumed handshake, sequential",
              "100 idle", "1MiB static", "keep-alive, syscalls", "keep-alive, instructions"):
        if (srv, v) not in tls and (srv, v) != ("nginx", "keep-alive, instructions"):  # smoke: spindle-c only
            problems.append("tls: no %s run on %s" % (v, srv))
# The Redis store's row is there when redis-server is (make test installs it).
if {r["variant"] for r in runs if r["workload"] == "sessions"} != {
        "hello", "memory store", "sqlite store", "redis store", "memory store, ab -c 1000",
        "memory store, returning visitor", "sqlite store, returning visitor", "redis store, returning visitor"}:
    problems.append("sessions variants: %s" % sorted({r["variant"] for r in runs if r["workload"] == "sessions"}))
for s in summ:
    idle = s["workload"] == "tls" and (s["variant"].endswith(" idle") or "callgrind" in s["variant"]
                                       or "strace" in s["variant"])
    if s["workload"] not in ("memory", "instructions", "parked", "h2memory") and not idle and not float(s["rps_median"]) > 0:
        problems.append("summary %s/%s/%s has no median" % (s["workload"], s["variant"], s["server"]))
if not any(s["workload"] == "wsgi" and s["variant"] == "hello" for s in summ):
    problems.append("summary: no WSGI hello row")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
PYEOF

# The targets the old single-purpose scripts judged: every one whose servers
# ran has a figure, and a smoke run judges none.
if "$PY" - "$R" <<'PYEOF'; then ok "targets.csv: every target with its servers in the run has a figure, none judged"; else bad "targets.csv checks (above)"; fi
import csv, sys
rows = {r["target"]: r for r in csv.DictReader(open(sys.argv[1] + "/targets.csv"))}
problems = []
want = ["keepalive req/s ≥ 0.95× nginx", "keepalive CPU/req ≤ 1.0× nginx", "close req/s ≥ 0.95× nginx",
        "close CPU/req ≤ 1.0× nginx", "instructions/request ≤ 0.5× nginx",
        "10,000 idle keep-alive connections in ≤ 40 MB (RSS, whole tree)", "static 1KiB req/s ≥ 1.0× nginx",
        "static 1MiB req/s ≥ 1.0× nginx", "WSGI keepalive req/s ≥ 0.9× nginx", "WSGI keepalive CPU/req ≤ 2× spindle-c",
        "WSGI close req/s ≥ 0.9× nginx", "WSGI close CPU/req ≤ 2× spindle-c",
        "new session per request, SQLite store, ≥ 0.30× hello world", "TLS keep-alive req/s ≥ 1.0× nginx",
        "TLS keep-alive CPU/req ≤ 0.9× nginx", "TLS full handshake conn/s ≥ 1.0× nginx",
        "TLS full handshake CPU/conn ≤ 1.0× nginx", "10,000 idle TLS connections: RSS/conn ≤ 1.0× nginx",
        # issue 34's
        "TLS keep-alive CPU/req ≤ 0.8× nginx", "no keep-alive (ab) c=50 CPU/req ≤ 0.85× nginx, default backend",
        "the 15-field request's parse < 1,000 instructions", "a parked WSGI spindle.websocket ≤ 12 KB (worker RSS)",
        "10,000 idle keep-alive connections in ≤ 6 MB (RSS, whole tree)"]
for t in want:
    r = rows.get(t)
    if r is None:
        problems.append("no target %r" % t)
    elif not (r["value"] and float(r["value"]) > 0 and r["verdict"] == "not judged"):
        problems.append("target %r: %s" % (t, r))
# uWSGI and gunicorn are not in this run: their targets are "not run".
for t in ("WSGI keepalive req/s ≥ 4× uwsgi", "WSGI keepalive req/s ≥ 10× gunicorn-sync"):
    if rows.get(t, {}).get("verdict") != "not run":
        problems.append("target %r: %s" % (t, rows.get(t)))
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
PYEOF

# The hot path (what bench/instructions.sh listed): per-function self
# instructions per request, the parser first or near it.
tsv=$R/instructions.spindle-c.functions.tsv
if [ -s "$tsv" ] && head -6 "$tsv" | grep -qE $'\t(http_parse_request|parse_avx2|parse_base)$' && [ -s "$R/instructions.spindle-c.callgrind.out" ] &&
  grep -q '^Hot path, spindle-c' "$R/bench.md"; then
  ok "instructions hot path: $tsv lists the parser (http_parse_request or its AVX2/baseline copy) on top, the profile is kept, bench.md shows it"
else
  bad "instructions hot path: $tsv missing or without the parser (http_parse_request, parse_avx2, parse_base) on top"
  head -8 "$tsv" 2>/dev/null
fi

md=$R/bench.md
for h in "## Servers" "## Hello world, keep-alive" "## Hello world without keep-alive" "## Latency at a fixed rate" \
  "## Memory per idle" "## WSGI applications" "## Static files" "## Scaling with workers" "## User-space instructions" \
  "## Syscalls per request" "## Sessions" "## Parked clients" "## TLS 1.3" "## Targets"; do
  if grep -q "^$h" "$md" 2>/dev/null; then ok "bench.md: $h"; else bad "bench.md lacks '$h'"; fi
done
if grep -q '^Load: build/bench/pace, open loop' "$md" 2>/dev/null; then
  ok "bench.md: the latency runs used the open-loop generator"
else
  bad "bench.md: the latency runs did not use build/bench/pace"
fi
if grep -q '^| c=50 | \*\*spindle-c\*\* | [0-9,]* (' "$md" 2>/dev/null; then ok "bench.md: keep-alive row for spindle-c"; else bad "bench.md: no keep-alive row for spindle-c"; fi
# Syscalls per request (its own strace run) as a column of the hello-world
# tables; the progress line in the log, one per run, ending at the total.
if grep -q '^| variant | server | .* | syscalls/req (strace, its own run) | notes |$' "$md" &&
  grep -qE '^\| c=50 \| \*\*spindle-c\*\* \|.* \| [0-9]+\.[0-9]{2} \| [^|]* \|$' "$md"; then
  ok "bench.md: the keep-alive and close tables show syscalls per request"
else
  bad "bench.md: no syscalls/req column with a figure for spindle-c"
fi
if grep -qE '^# progress: 1/[0-9]+ runs, [0-9]+s elapsed, ~' "$log/out" && grep -qE '^# progress: ([0-9]+)/\1 runs' "$log/out"; then
  ok "the log shows the progress, one plain line per run, up to the planned total"
else
  bad "no progress lines in the log: $(grep -m3 progress "$log/out")"
fi
for c in keepalive keepalive-cpu close close-cpu latency memory wsgi static static-cpu scaling instructions; do
  if [ "$(head -c 8 "$R/$c.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
    grep -q "($c.png)" "$md"; then
    ok "$c.png is a PNG, shown in bench.md"
  else
    bad "$c.png missing, not a PNG, or not in bench.md"
  fi
done

# The asgi workload (issue 17): spindle beside uvicorn, every variant but
# callgrind (its pipeline is the instructions workload's, run above; a
# Python server under callgrind would add half a minute).
RA=$log/asgi
smoke_run " --workloads asgi" 300 "$log/asgi.out" 30 --workloads asgi --asgi-servers spindle,uvicorn \
  --asgi-instruction-servers none --out "$RA"
if "$PY" - "$RA" <<'PYEOF'; then ok "asgi: every variant measured on spindle and uvicorn, targets with figures"; else bad "asgi checks (above)"; fi
import csv, sys
R = sys.argv[1]
runs = [r for r in csv.DictReader(open(R + "/runs.csv")) if r["workload"] == "asgi"]
problems = []
for srv in ("spindle", "uvicorn"):
    for v in ("hello c=50", "fastapi c=50", "ws echo, 100 clients"):
        rs = [r for r in runs if r["server"] == srv and r["variant"] == v]
        if not rs or not (float(rs[0]["requests_per_s"]) > 0 and float(rs[0]["server_cpu_us_per_request"]) > 0):
            problems.append("asgi %s on %s: %s" % (v, srv, rs))
        elif srv == "spindle" and (int(rs[0]["errors"]) or int(rs[0]["non2xx"])):
            problems.append("asgi %s on spindle saw errors: %s" % (v, rs[0]))
    idle = [r for r in runs if r["server"] == srv and r["variant"] == "50 idle WebSockets"]
    if not idle or idle[0]["held_open"] != "50" or not float(idle[0]["bytes_per_connection"] or 0) > 0:
        problems.append("asgi idle WebSockets on %s: %s" % (srv, idle))
if any(r["variant"] == "instructions" for r in runs):
    problems.append("asgi: a callgrind run although --asgi-instruction-servers none")
targets = {r["target"]: r for r in csv.DictReader(open(R + "/targets.csv")) if r["issue"] == "17"}
if len(targets) != 4 or not all(r["value"] and r["verdict"] == "not judged" for r in targets.values()):
    problems.append("issue 17 targets: %s" % list(targets.values()))
idle34 = next((r for r in csv.DictReader(open(R + "/targets.csv"))
               if r["target"].startswith("an idle ASGI WebSocket ≤ 12 KB")), None)
if not idle34 or not idle34["value"] or not idle34["verdict"].startswith("not judged"):
    problems.append("issue 34's idle ASGI WebSocket target: %s" % idle34)
md = open(R + "/bench.md").read()
if "## ASGI" not in md or "(asgi.png)" not in md:
    problems.append("bench.md has no ASGI section with its chart")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
PYEOF

# The page workload (issue 34, item 5): headless Chromium loads the page of
# 101 files from spindle-c and nginx, two loads each, over HTTP/1.1 with
# the cache off; every load saw all 101 responses, no error, and used at
# least one and at most Chromium's 6 connections; the target has a figure.
RP=$log/page
if [ -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  smoke_run " --workloads page" 120 "$log/page.out" 20 --workloads page --servers spindle-c,nginx --out "$RP"
  if "$PY" - "$RP" <<'PYEOF'; then ok "page: two loads each of spindle-c and nginx, 101 responses over 1-6 connections, the target with a figure"; else bad "page checks (above)"; fi
import csv, sys
R = sys.argv[1]
runs = [r for r in csv.DictReader(open(R + "/runs.csv")) if r["workload"] == "page"]
problems = []
for srv in ("spindle-c", "nginx"):
    rs = [r for r in runs if r["server"] == srv]
    if len(rs) != 2:
        problems.append("page on %s: %d loads, want 2" % (srv, len(rs)))
    for r in rs:
        if not (float(r["load_ms"]) > 0 and r["requests"] == "101" and 1 <= int(r["connections"]) <= 6
                and r["errors"] == "0" and r["non2xx"] == "0" and not r["note"]):
            problems.append("page load on %s: %s" % (srv, r))
t = [r for r in csv.DictReader(open(R + "/targets.csv")) if r["target"] == "page load ≤ 1.0× nginx"]
if not (t and float(t[0]["value"] or 0) > 0 and t[0]["verdict"] == "not judged"):
    problems.append("target page load: %s" % t)
if "## A browser's page over HTTP/1.1" not in open(R + "/bench.md").read():
    problems.append("bench.md has no page section")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
PYEOF
else
  skip 2 "page workload: no Chromium (Debian: chromium)"
fi

# A wrapper: bench/idle.sh reaches bench/run with its workload, servers and
# connection count.
start=$SECONDS
if OUT=$log/idle timeout 120 bench/idle.sh --smoke --connections 150 >"$log/idle.out" 2>&1 &&
  grep -q '^Command: `bench/run .*--servers spindle-c,nginx --workloads memory --idle-connections 150' "$log/idle/bench.md" &&
  "$PY" - "$log/idle/runs.csv" <<'PYEOF'; then
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]))]
assert sorted(r["server"] for r in rows) == ["nginx", "spindle-c"], rows
assert all(r["workload"] == "memory" and r["connections"] == "150" and r["held_open"] == "150" for r in rows), rows
PYEOF
  ok "bench/idle.sh --smoke ran bench/run's memory workload on spindle-c and nginx ($((SECONDS - start)) s)"
else
  bad "bench/idle.sh --smoke ($((SECONDS - start)) s)"
  tail -20 "$log/idle.out"
fi

# bench/instructions.sh's SERVERS: "spindle" alone is the C server; other
# names pass unchanged (its sed once made spindle-c into spindle-c-c).
out=$(PRINT=1 SERVERS="spindle spindle-c-uring nginx" bench/instructions.sh --smoke 2>&1)
if echo "$out" | grep -q -- '--servers spindle-c,spindle-c-uring,nginx --instruction-servers spindle-c,spindle-c-uring,nginx '; then
  ok "bench/instructions.sh maps SERVERS word by word (spindle → spindle-c, spindle-c-uring as it is)"
else
  bad "bench/instructions.sh SERVERS mapping: $out"
fi

# Bad options: refused with a message naming the choices, exit status 2.
out=$("$PY" bench/run --smoke --workloads nosuch 2>&1)
if [ $? = 2 ] && echo "$out" | grep -q "unknown workload(s) nosuch: choose from keepalive"; then
  ok "an unknown workload is refused"
else
  bad "unknown workload: $out"
fi
out=$("$PY" bench/run --smoke --servers apache 2>&1)
if [ $? = 2 ] && echo "$out" | grep -q "unknown server(s) apache"; then ok "an unknown server is refused"; else bad "unknown server: $out"; fi
out=$("$PY" bench/run --smoke --instruction-requests 500,100 2>&1)
if [ $? = 2 ] && echo "$out" | grep -q "0 < N1 < N2"; then ok "bad --instruction-requests are refused"; else bad "--instruction-requests 500,100: $out"; fi

finish
