"""fanout.py — bench/run's fanout workload (issue 30): K instances of each
system and a fresh Redis on the server CPU, build/bench/fanout on the load
generator's; memory per subscriber from the instances' RSS; fanout.csv and
bench.md's section."""
import csv
import os
import re
import select
import subprocess
import time

from . import peers, procs
from .report import fmt

APPS = os.path.join(peers.BENCH, "fanout")
SYSTEMS = ["spindle-c", "spindle", "channels", "channels-pubsub", "socketio"]
DEFAULT = ["spindle-c", "spindle", "channels", "socketio"]
DOC = {
    "spindle-c": "`build/spindle --app app_fanout.so --bus redis://… --workers 1`: a C handler, "
                 "sp_bus_subscribe then sp_ws_send per message (`bench/fanout/app_fanout.c`)",
    "spindle": "`python -m spindle asgi_fanout:app --bus redis://… --workers 1`: ASGI, "
               "`spindle.asubscribe` / `apublish` (`bench/fanout/asgi_fanout.py`)",
    "channels": "Django Channels 4.3.2 + channels_redis 4.3.0 `RedisChannelLayer` (the default layer), "
                "group_add / group_send, on uvicorn (httptools, uvloop, websockets) (`channels_fanout.py`)",
    "channels-pubsub": "the same with channels_redis's `RedisPubSubChannelLayer`",
    "socketio": "python-socketio 5.18.1 `AsyncServer` with `AsyncRedisManager`, `emit` to all, on uvicorn "
                "(httptools, uvloop, websockets); the client speaks Engine.IO v4 over a raw WebSocket "
                "(`socketio_fanout.py`)",
}
UVICORN = ["-m", "uvicorn", "--host", "127.0.0.1", "--http", "httptools", "--loop", "uvloop", "--ws", "websockets",
           "--no-access-log", "--log-level", "warning", "--backlog", "4096"]
KV = re.compile(r"(\w+)=(-?[\d.]+|\w+)")


def log(msg):
    from .workloads import log as wlog
    wlog(msg)


def missing(name):
    mods = {"spindle": [], "spindle-c": [], "channels": ["channels", "channels_redis", "uvicorn", "uvloop"],
            "channels-pubsub": ["channels", "channels_redis", "uvicorn", "uvloop"],
            "socketio": ["socketio", "redis", "uvicorn", "uvloop"]}[name]
    for m in mods:
        if not peers.have_module(m):
            return peers.missing_module(m)
    return None


def build_app(ctx):
    """app_fanout.c as an --app module (cc -shared, as spindle.h says)."""
    out = os.path.join(ctx.tmp, "app_fanout.so")
    cmd = ["cc", "-std=c11", "-D_GNU_SOURCE", "-O2", "-fPIC", "-shared", "-I", os.path.join(peers.ROOT, "include"),
           "-o", out, os.path.join(APPS, "app_fanout.c")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return out if r.returncode == 0 else None


def command(ctx, name, port, redis_url, app_so):
    """(argv, env) of one instance of NAME."""
    env = {"FANOUT_REDIS": redis_url, "PYTHONPATH": ctx.spindle_py}
    if name == "spindle-c":
        return [ctx.spindle_bin, "--app", app_so, "--bus", redis_url, "--bind", "127.0.0.1:%d" % port,
                "--workers", "1", "--max-connections", "15000"], env
    if name == "spindle":
        return [peers.PY, "-m", "spindle", "asgi_fanout:app", "--bus", redis_url, "--bind", "127.0.0.1:%d" % port,
                "--workers", "1", "--max-connections", "15000"], env
    if name == "channels-pubsub":
        env["FANOUT_LAYER"] = "pubsub"
    mod = "socketio_fanout:app" if name == "socketio" else "channels_fanout:application"
    return [peers.PY] + UVICORN + ["--port", str(port), mod], env


def _memory(servers):
    return sum(procs.tree_memory_kb(s.pid)[0] for s in servers)


def _lines(p, want, timeout):
    """Lines of p's stdout until one starts with WANT (or p ends, or the time
    runs out): (lines, the matching line or None)."""
    out, end = [], time.monotonic() + timeout
    while time.monotonic() < end:
        r, _, _ = select.select([p.stdout], [], [], 1.0)
        if not r:
            if p.poll() is not None:
                break
            continue
        line = p.stdout.readline()
        if not line:
            break
        out.append(line.strip())
        if line.startswith(want):
            return out, line
    return out, None


def one(ctx, name, app_so):
    """Runs one system: its rows, or [] with a problem noted."""
    o = ctx.opts
    n, k = o.fanout_subscribers, o.fanout_instances
    work = os.path.join(ctx.tmp, "fanout-" + name)
    os.makedirs(work, exist_ok=True)
    rport = procs.free_port()
    redis = procs.redis_server(rport, ctx.server_cpus, os.path.join(work, "redis"), "--maxclients", "20000")
    started = [redis.start()]
    ctx.servers.append(redis)
    try:
        redis.wait_listening(15)
        url = "redis://127.0.0.1:%d" % rport
        insts = []
        for i in range(k):
            port = procs.free_port()
            argv, env = command(ctx, name, port, url, app_so)
            s = procs.Server(name, argv, port, ctx.server_cpus, os.path.join(work, "i%d" % i), env=env, cwd=APPS)
            insts.append(s.start())
            started.append(s)
            ctx.servers.append(s)
        for s in insts:
            s.wait_listening(60)
        ctx.fanout_commands.setdefault(name, " ".join(insts[0].argv).replace(peers.ROOT + "/", "")
                                       .replace(ctx.tmp + "/", "").replace(str(insts[0].port), "PORT")
                                       .replace(str(rport), "RPORT"))
        time.sleep(2.0 if name.startswith("spindle") else 3.0)  # Python workers import their app
        before, rbefore = _memory(insts), procs.tree_memory_kb(redis.pid)[0]
        lg = ["taskset", "-c", procs.cpu_list(ctx.lg_cpus), ctx.fanout_bin, "--ports",
              ",".join(str(s.port) for s in insts), "--subscribers", str(n), "--seconds", str(o.fanout_seconds),
              "--count", "100000", "--ladder", ",".join("%g" % f for f in o.fanout_ladder), "--step",
              str(o.fanout_step), "--wait-go", "--connect", "240", "--drain", "5", "--server-cpu", str(ctx.server_cpus[0])]
        if name == "socketio":
            lg.append("--sio")
        with open(os.path.join(work, "fanout.err"), "w") as err:
            p = subprocess.Popen(lg, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)
        more = []
        out, ready = [], None
        try:
            out, ready = _lines(p, "READY", 300)
            if not ready:
                raise RuntimeError("no READY from the load generator: %s" % " | ".join(out[-3:]))
            time.sleep(1.5)
            after, rafter = _memory(insts), procs.tree_memory_kb(redis.pid)[0]
            p.stdin.write("go\n")
            p.stdin.flush()
            budget = 60 + o.fanout_seconds + len(o.fanout_ladder) * (o.fanout_step + 35)
            more, _ = _lines(p, "\0never", budget)
        finally:
            if p.poll() is None:
                p.kill()
            p.wait()
            with open(os.path.join(ctx.opts.out, "fanout-%s.out" % name), "w") as f:
                f.write("\n".join(lg + [""] + (out if ready is None else out + more)) + "\n")
        opened = int(KV.search(ready[ready.index("open="):]).group(2))
        connect_s = float(dict(KV.findall(ready)).get("connect_s", 0))
        rows, factor = [], None
        for line in more:
            if line.startswith("FANOUT"):
                f = dict(KV.findall(line))
                if "error" in f:
                    raise RuntimeError(line)
                rows.append(_row(name, f, factor, opened, before, after, rbefore, rafter, connect_s, n, k))
            elif line.startswith("STEP"):
                f = dict(KV.findall(line))
                rows[-1]["held"] = int(f["held"])
                rows[-1]["variant"] = "open ×%s" % f["factor"]
        if not rows:
            raise RuntimeError("no FANOUT line: %s" % " | ".join(more[-3:]))
        c = rows[0]
        c["held"] = int(c["lost"] == 0 and c["published"] > 0 and c["delivered"] >= c["expected"])
        if not c["published"] or c["lost"]:
            ctx.problem("fanout %s: the closed loop published %d messages, %d deliveries lost (%s)" % (
                name, c["published"], c["lost"], "no message reached every subscriber within 10 s"
                if not c["published"] else "see fanout-%s.out" % name))
        for s in insts:
            if not s.alive():
                ctx.problem("fanout: a %s instance died:\n%s" % (name, s.log_tail(5)))
        return rows
    except (RuntimeError, OSError, ValueError) as e:
        ctx.problem("fanout %s failed: %s" % (name, str(e)[:300]))
        return []
    finally:
        procs.stop_all(started)


def _row(name, f, factor, opened, before, after, rbefore, rafter, connect_s, n, k):
    g = {key: float(v) for key, v in f.items() if re.match(r"-?[\d.]+$", v)}
    return {"workload": "fanout", "variant": "closed loop" if f["mode"] == "closed" else "open",
            "server": name, "app": "fanout", "workers": k, "connections": n, "round": 1, "held_open": opened,
            "rate": g["rate"], "published": int(g["published"]), "pub_rate": g["pub_rate"],
            "delivered": int(g["delivered"]), "expected": int(g["expected"]), "lost": int(g["lost"]),
            "deliveries_per_s": g["deliveries_per_s"], "p50_ms": g["p50_us"] / 1000, "p90_ms": g["p90_us"] / 1000,
            "p99_ms": g["p99_us"] / 1000, "max_ms": g["max_us"] / 1000, "closed": int(g["closed"]), "reordered": int(g["dups"]),
            "pub_errors": int(g["pub_errors"]), "loadgen_cpu_pct": g["lg_cpu_pct"],
            "server_cpu_pct": next((v for key, v in g.items() if key.endswith("_busy_pct")), ""), "rss_kb_before": before, "rss_kb_after": after,
            "bytes_per_connection": round((after - before) * 1024 / max(opened, 1)),
            "redis_bytes_per_subscriber": round((rafter - rbefore) * 1024 / max(opened, 1)),
            "connect_s": connect_s}


def ms(v):
    """A latency cell: none when no message reached everyone (-1)."""
    return fmt(v, 1) if v is not None and v >= 0 else "–"


def best(rows, name):
    """A system's figure: its highest deliveries/s among the phases that
    held (nothing lost; open loop: the rate kept, p99 in bound)."""
    ok = [r for r in rows if r["server"] == name and r.get("held")]
    return max(ok, key=lambda r: r["deliveries_per_s"]) if ok else None


CSV = ["server", "variant", "connections", "held_open", "rate", "published", "pub_rate", "expected", "delivered",
       "lost", "reordered", "held", "deliveries_per_s", "p50_ms", "p90_ms", "p99_ms", "max_ms", "closed", "pub_errors",
       "bytes_per_connection", "redis_bytes_per_subscriber", "loadgen_cpu_pct", "server_cpu_pct", "connect_s"]


def run(ctx):
    import resource
    o = ctx.opts
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if o.fanout_subscribers + 40 > nofile:  # the load generator holds them all, plus its own few
        ctx.problem("fanout: %d subscribers do not fit the open-files limit %d: %d instead"
                    % (o.fanout_subscribers, nofile, nofile - 40))
        o.fanout_subscribers = nofile - 40
    ctx.fanout_commands = {}
    src = os.path.join(peers.ROOT, "build", "bench", "fanout")
    if not os.access(src, os.X_OK):
        ctx.problem("fanout skipped: build/bench/fanout not built (make)")
        return
    ctx.fanout_bin = os.path.join(ctx.tmp, "snap", "fanout")
    subprocess.run(["cp", src, ctx.fanout_bin], check=True)
    app_so = build_app(ctx)
    for name in o.fanout_systems:
        why = missing(name) or (None if app_so or name != "spindle-c" else "bench/fanout/app_fanout.c did not build")
        if why:
            ctx.problem("fanout: %s skipped: %s" % (name, why))
            continue
        log("fanout: %s, %d subscribers over %d instances" % (name, o.fanout_subscribers, o.fanout_instances))
        rows = one(ctx, name, app_so)
        for r in rows:
            log("fanout %-16s %-12s %8s deliveries/s, p50 %s ms, p99 %s ms, lost %d, held %s" % (
                name, r["variant"], fmt(r["deliveries_per_s"]), fmt(r["p50_ms"], 1), fmt(r["p99_ms"], 1),
                r["lost"], r.get("held")))
        ctx.rows.extend(rows)
    with open(os.path.join(o.out, "fanout.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, CSV, extrasaction="ignore")
        w.writeheader()
        for r in ctx.rows:
            if r["workload"] == "fanout":
                w.writerow({c: (round(v, 3) if isinstance(v, float) else v) for c, v in r.items()})


def section(ctx):
    """bench.md's fanout part: the systems, the best held figure of each, the
    target, and every phase."""
    rows = [r for r in ctx.rows if r["workload"] == "fanout"]
    if not rows:
        return []
    o = ctx.opts
    out = ["## Fan-out: WebSocket subscribers over %d instances, one Redis (issue 30)" % o.fanout_instances, "",
           "%d subscribers spread round-robin over %d instances of each system, all on CPU %s with their Redis "
           "(a fresh redis-server per system); `build/bench/fanout` (C, epoll) on CPU %s opens them, POSTs "
           "numbered messages (%d-byte JSON carrying the publisher's CLOCK_MONOTONIC) to the first instance, "
           "and times each message from its publish to its LAST subscriber. Closed loop for %s s (the next "
           "publish once the previous reached everyone), then open-loop steps at %s × the closed loop's "
           "rate for %s s each, up while a step holds: nothing lost, ≥ 95 %% of the rate published, p99 ≤ "
           "max(2 × the closed loop's p99, 100 ms). A system's figure is its best held phase. Memory: RSS of "
           "the instances (all processes) with the subscribers connected minus before, ÷ subscribers (Redis "
           "apart)." % (o.fanout_subscribers, o.fanout_instances, procs.cpu_list(ctx.server_cpus),
                        procs.cpu_list(ctx.lg_cpus), 64, o.fanout_seconds,
                        ", ".join("%g" % f for f in o.fanout_ladder), o.fanout_step), "",
           "| system | what runs | command (one instance) |", "|---|---|---|"]
    for name, cmd in ctx.fanout_commands.items():
        out.append("| %s | %s | `%s` |" % (name, DOC[name], cmd))
    out += ["", "| system | subscribers open | best held phase | deliveries/s | p50 ms | p99 ms | lost "
            "| memory/subscriber (B) | Redis B/subscriber | connect s | load-gen CPU % | server CPU % |",
            "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    names = [n for n in SYSTEMS if any(r["server"] == n for r in rows)]
    for n in names:
        b, first = best(rows, n), next(r for r in rows if r["server"] == n)
        r = b or first
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            n, fmt(r["held_open"]), r["variant"] if b else "none held", fmt(r["deliveries_per_s"]),
            ms(r["p50_ms"]), ms(r["p99_ms"]), r["lost"], fmt(r["bytes_per_connection"]),
            fmt(r["redis_bytes_per_subscriber"]), fmt(r["connect_s"], 1), fmt(r["loadgen_cpu_pct"]),
            fmt(r["server_cpu_pct"])))
    peer = [best(rows, n) for n in names if not n.startswith("spindle")]
    peer = max([p for p in peer if p], key=lambda r: r["deliveries_per_s"], default=None)
    if not peer:
        out += ["", "Target (issue 30): no peer held a phase at %d subscribers (every message to every subscriber), "
                "so there is no peer figure to compare with at this size." % o.fanout_subscribers]
    for mine in ("spindle-c", "spindle"):
        b = best(rows, mine)
        if b and peer:
            x = b["deliveries_per_s"] / peer["deliveries_per_s"]
            out += ["", "Target (issue 30: ≥ 3× the best peer's deliveries/s at a lower p99), %s against %s: "
                    "%.2f× the deliveries/s, p99 %s vs %s ms: **%s**." % (
                        mine, peer["server"], x, fmt(b["p99_ms"], 1), fmt(peer["p99_ms"], 1),
                        "met" if x >= 3 and b["p99_ms"] < peer["p99_ms"] else "NOT met")]
    out += ["", "Every phase:", "", "| system | phase | msgs/s asked → published | messages | deliveries/s "
            "| p50 ms | p90 ms | p99 ms | max ms | lost | held | load-gen CPU % | server CPU % |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append("| %s | %s | %s → %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["server"], r["variant"], fmt(r["rate"], 1) if r["rate"] else "closed", fmt(r["pub_rate"], 1),
            fmt(r["published"]), fmt(r["deliveries_per_s"]), ms(r["p50_ms"]), ms(r["p90_ms"]),
            ms(r["p99_ms"]), ms(r["max_ms"]), r["lost"], "yes" if r.get("held") else "no",
            fmt(r["loadgen_cpu_pct"]), fmt(r["server_cpu_pct"])))
    return out + [""]
