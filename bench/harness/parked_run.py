"""parked_run.py — the parked workload's pieces beside workloads.py's
_parked_phase: the server's command line (examples/chat, or the Python peer
bench/peers/uvicorn_parked.py: uvicorn with httptools, uvloop and websockets
from build/venv), and the row a phase
gives (memory per parked connection, broadcasts that reached every client,
and why clients failed, if any did)."""
import json
import os
import statistics
import subprocess
import time

from . import peers


PEER_MODULES = ("uvicorn", "httptools", "uvloop", "websockets")


def python_peer(ctx):
    """True when build/venv can run the uvicorn peer
    (bench/peers/uvicorn_parked.py), else False with a problem noted."""
    missing = [m for m in PEER_MODULES if not peers.have_module(m)]
    if missing:
        ctx.problem("parked: no uvicorn peer: %s" % peers.missing_module(missing[0]))
        return False
    ctx.versions.setdefault("parked uvicorn", "uvicorn %s, httptools %s, uvloop %s, websockets %s" % tuple(
        peers.dist_version(m) for m in PEER_MODULES))
    return True


def start_clients(workdir, port, npoll, nws, seconds):
    """bench/parked_client.py, one process per kind, each told "go" once all
    are READY (or gone, or after 120 s): [(kind, process, stdout file)]."""
    clients = []
    for kind, n in (("poll", npoll), ("ws", nws)):
        if n:
            out = open(os.path.join(workdir, "client-%s.out" % kind), "w+")
            err = open(os.path.join(workdir, "client-%s.err" % kind), "w")
            # --go: every client process measures the same window, from
            # the moment all of them are READY (each used to start its own
            # at its own READY: polls ready in 2 s were gone before 10,000
            # WebSockets were in, and no broadcast could reach all).
            p = subprocess.Popen([peers.PY, os.path.join(peers.BENCH, "parked_client.py"), "--port", str(port),
                                  "--" + kind, str(n), "--seconds", str(seconds), "--go"],
                                 stdin=subprocess.PIPE, stdout=out, stderr=err)
            clients.append((kind, p, out))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready = 0
        for _, p, out in clients:
            out.seek(0)
            ready += any(line.startswith("READY") for line in out) or p.poll() is not None
        if ready >= len(clients):
            break
        time.sleep(0.1)
    for _, p, _ in clients:
        try:
            p.stdin.write(b"go\n")
            p.stdin.close()
        except OSError:
            pass  # it has ended: its summary says why
    return clients


def collect(clients, seconds):
    """Each client process's JSON summary, by kind (a stand-in with errors
    -1 for one that printed none)."""
    results = {}
    for kind, p, out in clients:
        try:
            p.wait(seconds + 150)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        out.seek(0)
        lines = [line for line in out if line.startswith("{")]
        results[kind] = json.loads(lines[-1]) if lines else {"ready": 0, "errors": -1, "broadcasts": []}
        out.close()
    return results


def server_argv(ctx, server, port, no_guard, nofile):
    """The command line of a parked phase's server."""
    if server == "uvicorn":
        return [peers.PY, os.path.join(peers.BENCH, "peers", "uvicorn_parked.py"), "--port", str(port),
                "--announce-ms", "1000"]
    argv = [ctx.chat_bin, "--bind", "127.0.0.1:%d" % port, "--announce-ms", "1000",
            "--max-connections", str(nofile - 32), "--static",
            os.path.join(peers.ROOT, "examples", "chat", "static")]
    return argv + (["--no-guard-pages"] if no_guard else [])


def row(ctx, srv, workdir, server, name, npoll, nws, no_guard, results, before, after, mid, end):
    """A phase's row from the clients' summaries (results, by kind), memory
    before and with the clients ((rss, pss, maps) in KiB), the /stats of the
    sample (mid) and at the end (end)."""
    for kind, c in results.items():
        if c["errors"]:  # say why in bench.md: the workdir goes with the run
            with open(os.path.join(workdir, "client-%s.err" % kind), errors="replace") as f:
                why = " | ".join(line.strip() for line in f.readlines()[:3])
            ctx.problem("parked %s %s: %d %s clients failed: %s; server log: %s" % (
                server, name, c["errors"], kind, why or "(nothing on stderr)",
                srv.log_tail(3).strip().replace("\n", " | ") or "(empty)"))
    conns = sum(c["ready"] for c in results.values())
    by_seq = {}
    for c in results.values():
        for r in c["broadcasts"]:
            s = by_seq.setdefault(r["seq"], {"clients": 0, "max": 0, "p50": []})
            s["clients"] += r["clients"]
            s["max"] = max(s["max"], r["max_ms"])
            s["p50"].append(r["p50_ms"])
    full = [s for s in by_seq.values() if s["clients"] >= conns]
    mx = [s["max"] for s in full]
    n = max(conns, 1)
    who = " + ".join(x for x in ("%d polling" % npoll if npoll else "", "%d WebSockets" % nws if nws else "") if x)
    kind = "uvicorn" if server == "uvicorn" else "no guard pages" if no_guard else "guard pages"
    return {"workload": "parked", "variant": "%s, %s" % (who, kind),
            "app": "chat", "server": server, "workers": 0, "round": 1, "connections": npoll + nws,
            "held_open": conns, "client_errors": sum(c["errors"] for c in results.values()),
            "rss_kb_before": before[0], "rss_kb_after": after[0], "pss_kb_before": before[1],
            "pss_kb_after": after[1], "mappings": after[2],
            "bytes_per_connection": round((after[0] - before[0]) * 1024 / n),
            "pss_bytes_per_connection": round((after[1] - before[1]) * 1024 / n),
            "in_handlers": mid.get("ws", 0) + mid.get("parked", 0), "broadcasts": len(by_seq),
            "delivered_to_all": len(full), "delivery_ms_median": statistics.median(mx) if mx else "",
            "delivery_ms_worst": max(mx) if mx else "",
            "client_p50_ms": statistics.median([statistics.median(s["p50"]) for s in full]) if full else "",
            "ws_fanout_ms": end.get("fanout_max_us", 0) / 1000.0 if nws else "",
            "connect_s": max([c.get("connect_s", 0) for c in results.values()] or [0])}
