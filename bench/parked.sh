#!/usr/bin/env bash
# parked.sh — 10,000 long-polling clients and 10,000 open WebSockets parked
# on one spindle process (examples/chat, one loop), with a broadcast (the
# chat's "online" announcement) every second: resident memory per connection
# (VmRSS and Pss of the process, before and with the clients) and the time to
# deliver one broadcast to all. Runs with and without --no-guard-pages.
# Writes bench/results/parked.md (SMOKE=1: 200 clients, parked-smoke.md).
#   bench/parked.sh            SMOKE=1 bench/parked.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CHAT=${CHAT:-$BENCH_ROOT/build/examples/chat}
[ -x "$CHAT" ] || die "$CHAT is not built (make build/examples/chat)"
bench_init

ulimit -n 20000 || die "cannot raise the open-files limit to 20000"
NOFILE=$(ulimit -n)
if [ "${SMOKE:-0}" = 1 ]; then
  N=100 SECONDS_RUN=3 OUT=$RESULTS/parked-smoke.md
  PHASES="poll:$N:0 ws:0:$N mixed:$N:$N"
else
  N=10000 SECONDS_RUN=10 OUT=$RESULTS/parked.md
  # The server holds one fd per client plus a few of its own, and this
  # machine's hard limit may be 20000: the mixed run takes what fits.
  M=$(((NOFILE - 64) / 2))
  [ "$M" -gt "$N" ] && M=$N
  PHASES="poll:$N:0 ws:0:$N mixed:$M:$M"
fi

mem() { # PID -> "RSS_KB PSS_KB MAPPINGS"
  local rss pss maps
  rss=$(awk '/^VmRSS:/{print $2}' "/proc/$1/status")
  pss=$(awk '/^Pss:/{print $2}' "/proc/$1/smaps_rollup")
  maps=$(wc -l <"/proc/$1/maps")
  echo "$rss $pss $maps"
}

run_phase() { # NAME NPOLL NWS GUARDFLAG -> one JSON line on stdout
  local name=$1 npoll=$2 nws=$3 guard=$4 port pid before after cpids=() f
  port=$($PY -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
  "$CHAT" --bind "127.0.0.1:$port" --announce-ms 1000 --max-connections $((NOFILE - 32)) \
    $guard 2>"$TMPD/chat-$name.err" &
  pid=$!
  bench_track "$pid"
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/stats" >/dev/null && break
    sleep 0.05
  done
  sleep 0.5
  before=$(mem "$pid")
  # One client process per kind (each with its own fds and CPU time).
  rm -f "$TMPD"/client-*.out
  if [ "$npoll" -gt 0 ]; then
    $PY "$BENCH_ROOT/bench/parked_client.py" --port "$port" --poll "$npoll" --seconds "$SECONDS_RUN" \
      >"$TMPD/client-poll.out" 2>"$TMPD/client-poll.err" &
    cpids+=($!)
  fi
  if [ "$nws" -gt 0 ]; then
    $PY "$BENCH_ROOT/bench/parked_client.py" --port "$port" --ws "$nws" --seconds "$SECONDS_RUN" \
      >"$TMPD/client-ws.out" 2>"$TMPD/client-ws.err" &
    cpids+=($!)
  fi
  # Memory once every client says READY (all parked), a second later.
  for _ in $(seq 1200); do
    local ready=0
    for f in "$TMPD"/client-*.out; do grep -q '^READY' "$f" 2>/dev/null && ready=$((ready + 1)); done
    [ "$ready" -ge "${#cpids[@]}" ] && break
    sleep 0.1
  done
  # Parked pollers come and go around each broadcast: sample for 3 s and
  # keep the sample with the most connections parked in handlers.
  local stats_mid='{}' best=-1 m st k
  for _ in $(seq 10); do
    sleep 0.3
    m=$(mem "$pid")
    st=$(curl -sf "http://127.0.0.1:$port/stats" || echo '{}')
    k=$($PY -c 'import json,sys; d=json.loads(sys.argv[1]); print(d.get("ws",0)+d.get("parked",0))' "$st")
    if [ "$k" -gt "$best" ]; then best=$k after=$m stats_mid=$st; fi
  done
  for f in "${cpids[@]}"; do wait "$f" || true; done
  local stats_end
  stats_end=$(curl -sf "http://127.0.0.1:$port/stats" || echo '{}')
  stop_pid "$pid" || true # (its exit status is the signal's)
  $PY - "$name" "$guard" "$npoll" "$nws" "$before" "$after" "$stats_mid" "$stats_end" "$TMPD" <<'EOF'
import glob, json, statistics, sys
name, guard, npoll, nws, before, after, smid, send, tmpd = sys.argv[1:]
b, a = [list(map(int, x.split())) for x in (before, after)]
clients = {}
for f in glob.glob(tmpd + "/client-*.out"):
    lines = [l for l in open(f) if l.startswith("{")]
    clients[f.split("client-")[1][:-4]] = json.loads(lines[-1]) if lines else {"ready": 0, "errors": -1, "broadcasts": []}
conns = sum(c["ready"] for c in clients.values())
# per broadcast (seq): delivered to all kinds, the slowest client
by_seq = {}
for c in clients.values():
    for r in c["broadcasts"]:
        s = by_seq.setdefault(r["seq"], {"clients": 0, "max": 0, "p50": []})
        s["clients"] += r["clients"]
        s["max"] = max(s["max"], r["max_ms"])
        s["p50"].append(r["p50_ms"])
full = [s for s in by_seq.values() if s["clients"] >= conns]
mx = [s["max"] for s in full]
print(json.dumps({
    "phase": name, "guard": "no" if guard else "yes", "poll": int(npoll), "ws": int(nws),
    "parked": conns, "errors": sum(c["errors"] for c in clients.values()),
    "connect_s": max([c.get("connect_s", 0) for c in clients.values()] or [0]),
    "rss_before": b[0], "rss_after": a[0], "pss_before": b[1], "pss_after": a[1],
    "maps": a[2], "broadcasts": len(by_seq), "complete": len(full),
    "max_med": statistics.median(mx) if mx else None, "max_worst": max(mx) if mx else None,
    "p50_med": statistics.median([statistics.median(s["p50"]) for s in full]) if full else None,
    "fanout_ms": json.loads(send or "{}").get("fanout_max_us", 0) / 1000.0,
    "in_handlers": json.loads(smid or "{}").get("ws", 0) + json.loads(smid or "{}").get("parked", 0),
}))
EOF
}

log "parked clients: $PHASES (with and without guard pages), $SECONDS_RUN s of broadcasts each"
: >"$TMPD/rows.jsonl"
for guard in "" "--no-guard-pages"; do
  for ph in $PHASES; do
    IFS=: read -r name npoll nws <<<"$ph"
    log "$name: $npoll polling + $nws WebSockets ${guard:-(guard pages)}"
    run_phase "$name" "$npoll" "$nws" "$guard" >>"$TMPD/rows.jsonl"
    tail -n 1 "$TMPD/rows.jsonl" >&2
  done
done

$PY - "$TMPD/rows.jsonl" "$OUT" "$(nproc)" "$(uname -r)" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'EOF'
import json, sys, time
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
out, ncpu, kernel, load = sys.argv[2:]
mb = lambda kb: "%.1f MB" % (kb / 1024)
f = lambda v: "—" if v is None else "%.0f" % v
lines = ["### Parked clients %s" % time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()), "",
         "examples/chat, one process (one loop), 64 KiB coroutine stacks; a broadcast (the "
         "\"online\" announcement) every second for the run; clients are bench/parked_client.py "
         "(Python, epoll) on the same machine. Delivery: per broadcast, the slowest client's "
         "(receive time − the message's ts), client-side, so it includes the Python clients' own "
         "processing; \"ws fan-out\" is the server's time to write one broadcast to every "
         "WebSocket (worst seen). Machine: %s CPU, %s, load %s." % (ncpu, kernel, load), "",
         "| clients | guard pages | parked | errors | RSS before → with | Pss before → with | "
         "in handlers | RSS B/conn | Pss B/conn | mappings | broadcasts to all | delivery to all, median (worst) | "
         "per-client p50 | ws fan-out |",
         "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
for r in rows:
    who = " + ".join(x for x in ("%d polling" % r["poll"] if r["poll"] else "",
                                 "%d WebSockets" % r["ws"] if r["ws"] else "") if x)
    n = max(r["parked"], 1)
    lines.append("| %s | %s | %d | %d | %s → %s | %s → %s | %d | %d | %d | %d | %d/%d | %s ms (%s) | %s ms | %s |" % (
        who, r["guard"], r["parked"], r["errors"], mb(r["rss_before"]), mb(r["rss_after"]),
        mb(r["pss_before"]), mb(r["pss_after"]), r["in_handlers"], (r["rss_after"] - r["rss_before"]) * 1024 / n,
        (r["pss_after"] - r["pss_before"]) * 1024 / n, r["maps"], r["complete"], r["broadcasts"],
        f(r["max_med"]), f(r["max_worst"]), f(r["p50_med"]),
        "%.1f ms" % r["fanout_ms"] if r["ws"] else "—"))
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
log "wrote $OUT"
