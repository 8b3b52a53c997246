"""bench/run's asgi workload: spindle beside granian (ASGI, uvloop), uvicorn
(httptools+uvloop, and h11), hypercorn and daphne, one worker each, servers on the server CPUs and
the load on the load generator's: (a) the raw ASGI hello world and (b) a
FastAPI JSON endpoint, wrk keep-alive at the first --connections; (c)
WebSocket echo round trips/s (build/bench/ws_echo, --asgi-ws-clients
clients, small messages); memory per idle WebSocket; (d) instructions per
request under callgrind (--asgi-instruction-servers). Rows are workload
"asgi"; section() renders its tables in bench.md."""
import os
import re
import selectors
import shutil
import socket
import time
import urllib.request

from . import load, peers_asgi, procs
from .report import fmt, num, ratio

WS_MESSAGE = "Hello world!"


def log(msg):
    from .workloads import log as wlog
    wlog(msg)


def _peers(ctx, names):
    out = []
    for n in names:
        p = peers_asgi.BY_NAME[n](ctx)
        why = p.available()
        if why:
            ctx.problem("asgi: %s skipped: %s" % (n, why))
            continue
        ctx.versions.setdefault("asgi " + n, p.version())
        out.append(p)
    return out


def _server(ctx, peer, app, tag, prefix=()):
    port = procs.free_port()
    workdir = os.path.join(ctx.tmp, "asgi-%s-%s-%s" % (tag, peer.name, app))
    os.makedirs(workdir, exist_ok=True)
    argv, env, cwd = peer.command(app, port, ctx.opts.workers, workdir)
    ctx.asgi_commands.setdefault((peer.name, app), " ".join(argv).replace(procs_root(), ""))
    return procs.Server(peer.name, list(prefix) + argv, port, ctx.server_cpus, workdir, env=env, cwd=cwd)


def procs_root():
    from .peers import ROOT
    return ROOT + "/"


def _get(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=5) as r:
        return r.status, r.read()


def _start(ctx, ps, app, tag):
    """Starts every peer serving APP; keeps those that answer GET / right."""
    entries = [(p, _server(ctx, p, app, tag)) for p in ps]
    for _, srv in entries:
        srv.start()
        ctx.servers.append(srv)
    up = []
    for p, srv in entries:
        try:
            srv.wait_listening(30)
            deadline, err = time.monotonic() + 30, ""
            while True:
                try:
                    status, body = _get(srv.port)
                    if status == 200 and peers_asgi.check_body(app, body):
                        break
                    err = "answered %d %r" % (status, body[:100])
                except OSError as e:
                    err = str(e)
                if time.monotonic() > deadline or not srv.alive():
                    raise RuntimeError("GET /: %s\n%s" % (err, srv.log_tail()))
                time.sleep(0.2)
            up.append((p.name, srv))
        except RuntimeError as e:
            ctx.problem("%s did not come up (asgi %s): %s" % (p.name, app, e))
            srv.stop()
    for _, srv in up:
        load.warm_up(srv, ctx.lg_cpus)
    return up


def ws_echo(ctx, srv, clients, duration):
    """Round trips/s of CLIENTS WebSockets echoing small messages."""
    argv = ["taskset", "-c", procs.cpu_list(ctx.lg_cpus), ctx.ws_echo_bin, str(srv.port), str(clients),
            str(duration), "/ws", WS_MESSAGE]
    r = load.run_measured(argv, srv, duration + 40)
    row = load._from_bench_line(r, "ws_echo")
    m = re.search(r"\bopen=(\d+)", r["text"])
    if m and int(m.group(1)) < clients:
        row["note"] = (row.get("note", "") + " %s of %d WebSockets opened" % (m.group(1), clients)).strip()
    return row


def hold_websockets(port, count, timeout=60):
    """COUNT WebSockets opened (at most 64 handshakes in flight) and left
    idle; returns (sockets, how many got their 101)."""
    req = ("GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").encode()
    sel = selectors.DefaultSelector()
    done, pending, started = [], {}, 0
    deadline = time.monotonic() + timeout
    while (started < count or pending) and time.monotonic() < deadline:
        while started < count and len(pending) < 64:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(req)
            s.setblocking(False)
            pending[s] = b""
            sel.register(s, selectors.EVENT_READ)
            started += 1
        for key, _ in sel.select(0.5):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            pending[s] += data
            if b"\r\n\r\n" in pending[s] or not data:
                ok = pending[s].startswith(b"HTTP/1.1 101")
                sel.unregister(s)
                del pending[s]
                done.append((s, ok))
    for s in list(pending):
        sel.unregister(s)
        done.append((s, False))
    return [s for s, _ in done], sum(1 for _, ok in done if ok)


def idle_websockets(srv, count):
    """RSS per idle WebSocket: a few opened and closed first, so every
    server's caches and lazily made objects are there once (a server that
    has served nothing is not what a user runs), then COUNT held open. Few:
    spindle keeps a closed connection's coroutine stack in its pool with the
    pages it touched, and each one the COUNT reuse gives pages back when it
    parks, which would hide that many WebSockets' stacks from the figure."""
    warm, _ = hold_websockets(srv.port, max(1, min(10, count // 5)))
    for s in warm:
        s.close()
    time.sleep(1.0)
    before = procs.tree_memory_kb(srv.pid)
    socks, opened = hold_websockets(srv.port, count)
    time.sleep(1.0)
    after = procs.tree_memory_kb(srv.pid)
    for s in socks:
        s.close()
    row = {"connections": count, "held_open": opened, "rss_kb_before": before[0], "rss_kb_after": after[0],
           "pss_kb_before": before[1], "pss_kb_after": after[1]}
    if opened:
        row["bytes_per_connection"] = round((after[0] - before[0]) * 1024 / opened)
        row["pss_bytes_per_connection"] = round((after[1] - before[1]) * 1024 / opened)
    if opened < count:
        row["note"] = "%d of %d WebSockets opened" % (opened, count)
    return row


def _record(ctx, variant, app, server, r, res, conns):
    from .workloads import record
    base = {"workload": "asgi", "variant": variant, "app": app, "server": server, "workers": ctx.opts.workers,
            "connections": conns, "round": r}
    if "instructions_per_request" in res or "held_open" in res:
        row = dict(base, **res)
        ctx.rows.append(row)
        log("asgi %-22s %-12s %s" % (variant, server, (
            "%s instructions/request" % row["instructions_per_request"]) if "instructions_per_request" in res else
            "%s of %s open, RSS %s -> %s KiB, %s bytes/WebSocket" % (
                row["held_open"], row["connections"], row["rss_kb_before"], row["rss_kb_after"],
                row.get("bytes_per_connection", "-"))))
        return
    record(ctx, base, res)


def _rounds(ctx, items):
    for r in range(1, ctx.opts.rounds + 1):
        for it in (items if r % 2 else list(reversed(items))):
            yield r, it


def run(ctx):
    o = ctx.opts
    ctx.asgi_commands = {}
    ctx.ws_echo_bin = _snapshot(ctx, "ws_echo")
    ps = _peers(ctx, o.asgi_servers)
    conns = o.connections[0]
    for app, variants in (("hello", ["hello", "ws echo"]), ("fastapi", ["fastapi"])):
        if "throughput" not in o.asgi_parts:
            break
        why = peers_asgi.app_missing(app)
        if why:
            ctx.problem("asgi %s skipped: %s" % (app, why))
            continue
        up = _start(ctx, [p for p in ps if p.runs(app)], app, "run")
        for variant in variants:
            if variant == "ws echo" and not ctx.ws_echo_bin:
                ctx.problem("asgi ws echo skipped: build/bench/ws_echo not built (make)")
                continue
            for r, (name, srv) in _rounds(ctx, up):
                if not srv.alive():
                    ctx.problem("asgi: %s died during the %s runs:\n%s" % (name, variant, srv.log_tail()))
                    continue
                if variant == "ws echo":
                    res = ws_echo(ctx, srv, o.asgi_ws_clients, o.duration)
                    label, n = "ws echo, %d clients" % o.asgi_ws_clients, o.asgi_ws_clients
                else:
                    res = load.wrk("http://127.0.0.1:%d/" % srv.port, srv, conns, o.duration, ctx.lg_cpus)
                    label, n = "%s c=%d" % (variant, conns), conns
                _record(ctx, label, app, name, r, res, n)
                time.sleep(0.2)
        procs.stop_all([s for _, s in up])
    if "memory" in o.asgi_parts:
        fresh = _start(ctx, ps, "hello", "memory")
        for name, srv in fresh:
            res = idle_websockets(srv, o.asgi_idle_websockets)
            _record(ctx, "%d idle WebSockets" % o.asgi_idle_websockets, "hello", name, 1, res,
                    o.asgi_idle_websockets)
        procs.stop_all([s for _, s in fresh])
    if "instructions" in o.asgi_parts:
        instructions(ctx, [p for p in ps if p.name in o.asgi_instruction_servers])


def instructions(ctx, ps):
    n1, n2 = ctx.opts.ir_python
    for p in ps:
        def mk(prefix, d, p=p):
            port = procs.free_port()
            argv, env, cwd = p.command("hello", port, 1, d)
            return procs.Server(p.name, prefix + argv, port, ctx.server_cpus, d, env=env, cwd=cwd).start()

        log("asgi instructions: %s under callgrind (ab -k -c 10, %d then %d requests)" % (p.name, n1, n2))
        keep = os.path.join(ctx.opts.out, "instructions.asgi-" + p.name)
        try:
            res = load.instructions(mk, n1, n2, ctx.lg_cpus, keep=keep)
        except (RuntimeError, OSError) as e:
            ctx.problem("asgi instructions for %s failed: %s" % (p.name, e))
            continue
        with open(keep + ".functions.tsv", "w") as f:
            f.write("instructions_per_request\tshare_pct\tfunction\n")
            for ir, share, fn in res["functions"]:
                f.write("%s\t%s\t%s\n" % (ir, share, fn))
        _record(ctx, "instructions", "hello", p.name, 1, res, 10)


def _snapshot(ctx, name):
    src = os.path.join(procs_root(), "build", "bench", name)
    if not os.access(src, os.X_OK):
        return None
    dst = os.path.join(ctx.tmp, "snap", name)
    shutil.copy2(src, dst)
    return dst


def section(ctx, summary):
    """bench.md's ASGI part: servers, throughput, memory, instructions."""
    rows = [s for s in summary if s["workload"] == "asgi"]
    out = ["| server | what it is | command (hello) | note |", "|---|---|---|---|"]
    for (name, app), cmd in sorted(ctx.asgi_commands.items()):
        if app == "hello":
            p = peers_asgi.BY_NAME[name]
            out.append("| %s | %s | `%s` | %s |" % (name, p.doc, cmd, p.note))
    out += ["", "| variant | server | req/s (WebSocket: round trips/s) median (min–max) | CPU µs/req median "
            "| ÷ granian req/s | ÷ granian CPU/req | ÷ uvicorn req/s | ÷ uvicorn CPU/req | errors / non-2xx "
            "| load-gen CPU % | server CPUs busy otherwise % | notes |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    variants = []
    for s in rows:
        if s["variant"] not in variants and num(s["rps_median"]) is not None:
            variants.append(s["variant"])
    for v in variants:
        vs = sorted((s for s in rows if s["variant"] == v), key=lambda s: -(num(s["rps_median"]) or 0))
        ref = next((s for s in vs if s["server"] == "uvicorn"), None)
        gr = next((s for s in vs if s["server"] == "granian"), None)
        for s in vs:
            sat = " ⚠ saturated" if s["saturated_runs"] else ""
            out.append("| %s | %s | %s (%s–%s) | %s | %s | %s | %s | %s | %s / %s | %s%s | %s | %s |" % (
                v, s["server"], fmt(s["rps_median"]), fmt(s["rps_min"]), fmt(s["rps_max"]),
                fmt(s["cpu_us_median"], 1), ratio(s["rps_median"], gr["rps_median"]) if gr else "–",
                ratio(s["cpu_us_median"], gr["cpu_us_median"]) if gr else "–",
                ratio(s["rps_median"], ref["rps_median"]) if ref else "–",
                ratio(s["cpu_us_median"], ref["cpu_us_median"]) if ref else "–", s["errors"], s["non2xx"],
                fmt(s["loadgen_cpu_pct_median"]), sat, fmt(s.get("server_cpus_other_pct_median")), s["notes"]))
    mem = [r for r in ctx.rows if r["workload"] == "asgi" and "idle" in r["variant"]]
    ir = [r for r in ctx.rows if r["workload"] == "asgi" and r["variant"] == "instructions"]
    if mem:
        out += ["", "| server | idle WebSockets open | RSS before → with (KiB) | bytes/WebSocket (RSS) | (PSS) |",
                "|---|---:|---:|---:|---:|"]
        for r in sorted(mem, key=lambda r: num(r.get("bytes_per_connection")) or 1e12):
            out.append("| %s | %s of %s | %s → %s | %s | %s |" % (
                r["server"], r.get("held_open"), r.get("connections"), fmt(r.get("rss_kb_before")),
                fmt(r.get("rss_kb_after")), fmt(r.get("bytes_per_connection")), fmt(r.get("pss_bytes_per_connection"))))
    if ir:
        ref = next((r for r in ir if r["server"] == "uvicorn"), None)
        out += ["", "| server | instructions/request (raw ASGI hello, callgrind) | ÷ uvicorn |", "|---|---:|---:|"]
        for r in sorted(ir, key=lambda r: num(r.get("instructions_per_request")) or 1e12):
            out.append("| %s | %s | %s |" % (r["server"], fmt(r.get("instructions_per_request")),
                                             ratio(r.get("instructions_per_request"),
                                                   ref.get("instructions_per_request")) if ref else "–"))
    return out
