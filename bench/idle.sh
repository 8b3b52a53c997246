#!/bin/bash
# bench/idle.sh — resident memory of one spindle worker's whole process tree
# (master + worker) holding N (10,000) idle keep-alive connections, and the
# same for nginx (1 worker) under the same load.
#
# A small Python client (written to the scratch directory; selectors, at most
# 256 connections in flight) opens N connections, sends one keep-alive GET /
# on each, reads the 200 answer and keeps the connection open. Memory is read
# from /proc before the load (after one warm-up request) and while all N are
# held: the sum of VmRSS over the tree and the sum of Pss (smaps_rollup), so
# pages the master and worker share are not counted twice. Afterwards the
# client checks the server still holds every connection open.
#
# usage: bench/idle.sh [--smoke] [--connections N]
#   env: CONNS (10000), SMOKE=1 (200 connections), SERVERS ("spindle nginx"),
#        SETTLE (1 s before reading memory), SPINDLE, NGINX, OUT
set -uo pipefail
. "$(dirname "$0")/lib.sh"

SMOKE=${SMOKE:-0}
CONNS=${CONNS:-10000}
SERVERS=${SERVERS:-spindle nginx}
SETTLE=${SETTLE:-1}
while [ $# -gt 0 ]; do
  case $1 in
    --smoke) SMOKE=1 ;;
    --connections) CONNS=$2; shift ;;
    -h | --help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
  shift
done
[ "$SMOKE" = 1 ] && CONNS=200
OUT=${OUT:-$RESULTS/idle$([ "$SMOKE" = 1 ] && echo -smoke)}

if ! ulimit -n 20000 2>/dev/null; then
  # Smoke runs need few descriptors: take what the hard limit allows.
  ulimit -n "$(ulimit -Hn)" 2>/dev/null
  [ "$(ulimit -n)" -ge $((CONNS + 256)) ] || die "ulimit -n 20000 failed (hard limit $(ulimit -Hn))"
fi
[ "$CONNS" -le 15000 ] || die "at most 15000 connections (ulimit -n 20000)"
[ -x "$SPINDLE" ] || die "$SPINDLE not built (run make)"
bench_init

cat >"$TMPD/client.py" <<'PYEOF'
#!/usr/bin/python3
"""idle_client.py HOST PORT N [DEADLINE_S] — opens N connections, sends one
keep-alive GET / on each, reads the whole response (status must be 200,
body by Content-Length), and keeps every connection open and idle.

Prints "READY <ok> <seconds>" when all N answered, then waits for a line on
stdin, then prints "OPEN <k>": how many of the N the server still holds open
(a recv that would block), and exits. Exits 1 on a failure or after
DEADLINE_S (default 60) without all N answered. Part of bench/idle.sh."""
import errno
import resource
import selectors
import socket
import sys
import time

host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
deadline = time.monotonic() + (float(sys.argv[4]) if len(sys.argv) > 4 else 60.0)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if soft < n + 64:
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 1024), hard))

REQ = b"GET / HTTP/1.1\r\nHost: %s\r\nUser-Agent: idle.sh\r\n\r\n" % host.encode()
IN_FLIGHT = 256  # connections connecting or waiting for their answer at once

sel = selectors.DefaultSelector()
held = []  # answered, idle connections
started = 0
failed = 0
t0 = time.monotonic()


def start_one():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    err = s.connect_ex((host, port))
    if err not in (0, errno.EINPROGRESS):
        raise OSError(err, "connect")
    sel.register(s, selectors.EVENT_WRITE, {"state": "connect", "buf": b""})


def complete(buf):
    """True when buf holds a whole response; raises on a non-200."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return False
    head = buf[:end].decode("latin-1").split("\r\n")
    if head[0].split(" ")[1] != "200":
        raise RuntimeError("status line: " + head[0])
    length = 0
    for line in head[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == "content-length":
            length = int(v)
    return len(buf) - end - 4 >= length


while len(held) < n:
    while started < n and started - len(held) - failed < IN_FLIGHT:
        start_one()
        started += 1
    if time.monotonic() > deadline:
        print(f"TIMEOUT {len(held)} of {n} answered", flush=True)
        sys.exit(1)
    for key, ev in sel.select(timeout=1.0):
        s, st = key.fileobj, key.data
        if st["state"] == "connect":
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                print(f"connect failed: {errno.errorcode.get(err, err)}", flush=True)
                sys.exit(1)
            s.send(REQ)  # small: fits the empty send buffer
            st["state"] = "read"
            sel.modify(s, selectors.EVENT_READ, st)
        else:
            data = s.recv(4096)
            if not data:
                print("server closed a connection before answering", flush=True)
                sys.exit(1)
            st["buf"] += data
            if complete(st["buf"]):
                sel.unregister(s)
                held.append(s)

print(f"READY {len(held)} {time.monotonic() - t0:.2f}", flush=True)
sys.stdin.readline()
still = 0
for s in held:
    try:
        if s.recv(1) == b"":
            continue
    except BlockingIOError:
        still += 1
        continue
    except OSError:
        continue
print(f"OPEN {still}", flush=True)
PYEOF

# measure SERVER: one line of CSV for SERVER holding $CONNS idle connections.
measure() {
  local srv=$1 port pid dir="$TMPD/$1"
  mkdir -p "$dir"
  port=$(free_port)
  if [ "$srv" = spindle ]; then
    taskset -c 0 "$SPINDLE" --bind "127.0.0.1:$port" --workers 1 --log-level warning \
      --keepalive-timeout 120 --max-connections 15000 >"$dir/server.log" 2>&1 &
  else
    write_nginx_conf "$dir" "$port" on 20000
    taskset -c 0 $(nginx_cmd "$dir") >"$dir/server.log" 2>&1 &
  fi
  pid=$!
  bench_track "$pid"
  wait_listen "$port" || { cat "$dir/server.log" >&2; die "$srv did not start"; }
  sleep 0.3
  check_hello "$port" || die "$srv: GET / is not 200 Hello world!"
  sleep "$SETTLE"
  local before after procs
  before=$(tree_mem "$pid")
  procs=$(tree_pids "$pid" | wc -l)

  mkfifo "$dir/ctl"
  taskset -c 1 "$PY" "$TMPD/client.py" 127.0.0.1 "$port" "$CONNS" 60 <"$dir/ctl" >"$dir/client.out" 2>&1 &
  local cpid=$!
  exec 3>"$dir/ctl"
  local i ready=""
  for i in $(seq 700); do
    ready=$(grep -m1 '^READY' "$dir/client.out")
    [ -n "$ready" ] && break
    kill -0 "$cpid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$ready" ]; then
    exec 3>&-
    wait "$cpid"
    cat "$dir/client.out" >&2
    die "$srv: the client did not get $CONNS answers"
  fi
  sleep "$SETTLE"
  after=$(tree_mem "$pid")
  echo >&3
  exec 3>&-
  wait "$cpid"
  local open
  open=$(awk '/^OPEN/ {print $2}' "$dir/client.out")
  stop_pid "$pid"
  set -- $before $after
  local secs
  secs=$(echo "$ready" | awk '{print $3}')
  awk -v s="$srv" -v n="$CONNS" -v p="$procs" -v rb="$1" -v pb="$2" -v ra="$3" -v pa="$4" \
    -v o="${open:-0}" -v t="$secs" 'BEGIN {
    printf "%s,%d,%d,%d,%d,%d,%d,%.0f,%.0f,%d,%s\n", s, n, p, rb, pb, ra, pa,
      (ra - rb) * 1024 / n, (pa - pb) * 1024 / n, o, t }'
}

CSV=$OUT.csv
echo "server,connections,processes,rss_before_kb,pss_before_kb,rss_after_kb,pss_after_kb,rss_bytes_per_conn,pss_bytes_per_conn,still_open,open_seconds" >"$CSV"
FAIL=0
for srv in $SERVERS; do
  line=$(measure "$srv") || exit 1
  echo "$line" >>"$CSV"
  log "$line"
  open=$(echo "$line" | cut -d, -f10)
  if [ "$open" != "$CONNS" ]; then
    log "$srv closed $((CONNS - open)) of the $CONNS idle connections during the measurement"
    FAIL=1
  fi
done

MD=$OUT.md
{
  echo "### Idle keep-alive connections $(date -u +%Y-%m-%dT%H:%MZ)$([ "$SMOKE" = 1 ] && echo ' (smoke: no targets judged)')"
  echo
  echo "$CONNS connections, one GET / each, then idle; 1 worker, whole process tree (master + worker). Machine: $(machine_desc)."
  echo
  echo "| server | RSS before | RSS with $CONNS idle | Pss before | Pss with $CONNS idle | RSS bytes/conn | Pss bytes/conn | still open |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
  awk -F, 'NR > 1 {
    printf "| %s | %.1f MB | %.1f MB | %.1f MB | %.1f MB | %d | %d | %d |\n",
      $1, $4 / 1024, $6 / 1024, $5 / 1024, $7 / 1024, $8, $9, $10 }' "$CSV"
  if [ "$SMOKE" != 1 ] && [ "$CONNS" = 10000 ]; then
    echo
    awk -F, 'NR > 1 && $1 == "spindle" {
      printf "Target (issue 6): 10,000 idle connections in ≤ 40 MB: RSS %.1f MB, Pss %.1f MB — %s\n",
        $6 / 1024, $7 / 1024, ($6 <= 40 * 1024 ? "met" : "NOT met") }' "$CSV"
  fi
} >"$MD"
cat "$MD"
echo
echo "results: $MD $CSV"
exit "$FAIL"
