"""The workloads of bench/run. Each one starts its servers (pinned to the
server CPUs, the same worker count for all), checks every one answers GET /
correctly, then runs its variants round by round with the server order
reversed every other round, appending one row per run to ctx.rows."""
import functools
import os
import shutil
import time
import urllib.request

from . import databases, h2bench, load, parked_run, parse_ir, peers, procs, progress, py_parked


T0 = time.monotonic()


def log(msg):
    progress.say("# [%4.0f s] %s" % (time.monotonic() - T0, msg))


def fetch(port, path="/"):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
        return r.status, r.read()


def session_cookie(port):
    """The "name=value" of the session cookie GET / sets (the session demo)."""
    with urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=5) as r:
        for v in r.headers.get_all("Set-Cookie") or []:
            if v.startswith("spindle_sid="):
                return v.split(";")[0]
    raise RuntimeError("GET / set no spindle_sid cookie")


def start_checked(ctx, entries, timeout=30, path="/", check=None):
    """ENTRIES: [(label, Server, app)]. Starts them all, then waits until each
    answers GET PATH with 200 and a body CHECK(app, body) accepts (default:
    its app's body). A server that fails is dropped with a note rather than
    ending the whole run."""
    check = check or peers.check_body
    ok = []
    for label, srv, app in entries:
        srv.start()
        ctx.servers.append(srv)
    for label, srv, app in entries:
        try:
            srv.wait_listening(timeout)
            deadline = time.monotonic() + timeout
            while True:
                try:
                    status, body = fetch(srv.port, path)
                    if status == 200 and check(app, body):
                        break
                    err = "answered %d %r" % (status, body[:80])
                except OSError as e:
                    err = str(e)
                if time.monotonic() > deadline or not srv.alive():
                    raise RuntimeError("GET %s on %s: %s\n%s" % (path, label, err, srv.log_tail()))
                time.sleep(0.2)
            ok.append((label, srv, app))
        except RuntimeError as e:
            ctx.problem("%s did not come up: %s" % (label, e))
            srv.stop()
    return ok


def make_server(ctx, peer, app, workers, cpus, tag, **kw):
    port = procs.free_port()
    workdir = os.path.join(ctx.tmp, "%s-%s-%s-w%d" % (tag, peer.name, app, workers))
    os.makedirs(workdir, exist_ok=True)
    argv, env, cwd = peer.command(app, port, workers, workdir, **kw)
    if app == "hello" and not kw:
        shown = " ".join(argv).replace(ctx.tmp, "$TMP").replace(peers.ROOT + "/", "")
        ctx.commands.setdefault(peer.name, shown)
    env = dict(env, **ctx.app_env)
    return procs.Server(peer.name, argv, port, cpus, workdir, env=env, cwd=cwd)


def warm_up(ctx, up):
    """A short burst on each server before it is measured: JITs, pools,
    lazily imported code and first-request paths."""
    for entry in up:
        load.warm_up(entry[1], ctx.lg_cpus)


def rounds(ctx, items):
    """Yield (round, item) with ITEMS reversed on every other round."""
    for r in range(1, ctx.opts.rounds + 1):
        for it in (items if r % 2 else list(reversed(items))):
            yield r, it


def record(ctx, base, result):
    row = dict(base)
    row.update(result)
    ctx.rows.append(row)
    _log_row(row)
    if getattr(ctx, "progress", None):
        ctx.progress.tick(len(ctx.rows))  # after the run's own line


def _log_row(row):
    note = ("  [" + row["note"] + "]") if row.get("note") else ""
    head = "%-12s %-10s %-16s r%s: " % (row["workload"], row["variant"], row["server"], row.get("round", ""))
    if row["workload"] in ("memory", "h2memory", "parked"):
        log(head + "%s of %s held open, RSS %s -> %s KiB, %s bytes/connection%s" % (
            row.get("held_open"), row.get("connections"), row.get("rss_kb_before"), row.get("rss_kb_after"),
            row.get("bytes_per_connection", "-"), note))
        return
    if row["workload"] == "page":
        log(head + "loaded in %s ms over %s connections, %s responses, errors %s, non-2xx %s%s" % (
            row.get("load_ms"), row.get("connections"), row.get("requests"), row.get("errors"), row.get("non2xx"), note))
        return
    if row["workload"] == "instructions":
        log(head + "%s instructions/request (Ir %s and %s)%s" % (
            row.get("instructions_per_request"), row.get("ir_n1"), row.get("ir_n2"), note))
        return
    cpu = row.get("server_cpu_us_per_request")
    extra = ""
    if row.get("p99_ms") not in (None, ""):
        extra = ", p50 %.2f ms p99 %.2f ms" % (float(row.get("p50_ms") or 0), float(row["p99_ms"]))
    log(head + "%.0f req/s, %s µs CPU/req, errors %s, non-2xx %s, load generator %s%% CPU%s%s"
        % (row.get("requests_per_s") or 0, "%.1f" % cpu if isinstance(cpu, float) else "-",
           row.get("errors", ""), row.get("non2xx", ""), row.get("loadgen_cpu_pct", ""), extra, note))


def hello_group(ctx, selected):
    """keepalive (wrk c=each of --connections), close (ab c=each),
    latency (paced wrk), memory (idle connections): one set of hello-world
    servers kept up for all of them."""
    opts = ctx.opts
    peers_ = ctx.peers_for("hello", opts.servers)
    entries = [(p.name, make_server(ctx, p, "hello", opts.workers, ctx.server_cpus, "hello"), "hello")
               for p in peers_]
    up = start_checked(ctx, entries) if selected != ["memory"] else []
    time.sleep(0.5)
    variants = []
    if "keepalive" in selected:
        variants += [("keepalive", "c=%d" % c, c) for c in opts.connections]
    if "close" in selected:
        variants += [("close", "c=%d" % c, c) for c in opts.connections]
        variants += [("close", "wrk c=%d" % c, c) for c in opts.connections]
    if "latency" in selected:
        variants += [("latency", "%d req/s" % opts.rate, opts.latency_connections)]
    warm_up(ctx, up)
    for (wl, variant, conns) in variants:
        for r, (label, srv, app) in rounds(ctx, up):
            if not srv.alive():
                ctx.problem("%s died during the %s runs:\n%s" % (label, wl, srv.log_tail()))
                continue
            url = "http://127.0.0.1:%d/" % srv.port
            base = {"workload": wl, "variant": variant, "app": "hello", "server": label,
                    "workers": opts.workers, "connections": conns, "round": r}
            if wl == "keepalive":
                res = load.wrk(url, srv, conns, opts.duration, ctx.lg_cpus)
            elif wl == "close" and variant.startswith("wrk"):
                res = load.wrk(url, srv, conns, opts.duration, ctx.lg_cpus, close=True)
            elif wl == "close":
                res = load.ab(url, srv, conns, opts.duration, ctx.lg_cpus)
            else:
                if ctx.pace_bin:
                    res = load.paced(ctx.pace_bin, srv, conns, opts.rate, opts.latency_duration, ctx.lg_cpus)
                else:
                    pace = max(1, round(conns * 1000 / opts.rate))
                    res = load.wrk(url, srv, conns, opts.latency_duration, ctx.lg_cpus, pace_ms=pace)
                res["target_rate"] = opts.rate
                if res["requests_per_s"] < 0.9 * opts.rate:
                    res["note"] = (res.get("note", "") + " could not keep up with the rate").strip()
            record(ctx, base, res)
            time.sleep(0.2)
    procs.stop_all([s for _, s, _ in up])
    if "memory" in selected:
        # Fresh servers: after the runs above, memory a server kept from
        # 1,000 busy connections would hide what idle ones cost.
        fresh = start_checked(ctx, [(p.name, make_server(ctx, p, "hello", opts.workers, ctx.server_cpus, "memory"),
                                     "hello") for p in peers_])
        time.sleep(0.5)
        for label, srv, app in fresh:
            res = load.memory_per_connection(srv, opts.idle_connections)
            record(ctx, {"workload": "memory", "variant": "%d idle" % opts.idle_connections, "app": "hello",
                         "server": label, "workers": opts.workers, "round": 1}, res)
        procs.stop_all([s for _, s, _ in fresh])


def wsgi_matrix(ctx):
    """Every WSGI server × every app of --apps, wrk keep-alive. The hello
    app's row is the keepalive workload's run at the first --connections
    when that workload runs too; without it, hello is measured here."""
    opts = ctx.opts
    pg = None
    conns = opts.connections[0]
    for app in [a for a in opts.apps if a != "hello" or "keepalive" not in opts.workloads]:
        why = peers.app_missing(app)
        if why:
            ctx.problem("app %s skipped: %s" % (app, why))
            continue
        ctx.app_env = {}
        try:
            if app == "sqlite":
                ctx.app_env = {"BENCH_DB_URL": databases.sqlite_url(ctx.tmp)}
            elif app in ("pg", "mako-pg"):
                if pg is None:
                    why = databases.Postgres.missing()
                    if why:
                        ctx.problem("app %s skipped: %s" % (app, why))
                        continue
                    pg = databases.Postgres(ctx.server_cpus)
                    ctx.pg = pg
                    ctx.versions["PostgreSQL"] = pg.version()
                    pg.start()
                ctx.app_env = {"BENCH_DB_URL": pg.url}
            ps = [p for p in ctx.peers_for(app, opts.servers) if p.kind == "wsgi"]
            entries = [(p.name, make_server(ctx, p, app, opts.workers, ctx.server_cpus, "wsgi"), app) for p in ps]
            up = start_checked(ctx, entries)
            warm_up(ctx, up)
            for r, (label, srv, _) in rounds(ctx, up):
                if not srv.alive():
                    ctx.problem("%s died during the %s runs:\n%s" % (label, app, srv.log_tail()))
                    continue
                res = load.wrk("http://127.0.0.1:%d/" % srv.port, srv, conns, opts.duration, ctx.lg_cpus)
                record(ctx, {"workload": "wsgi", "variant": app, "app": app, "server": label,
                             "workers": opts.workers, "connections": conns, "round": r}, res)
                time.sleep(0.2)
            procs.stop_all([s for _, s, _ in up])
        finally:
            ctx.app_env = {}
    if pg:
        pg.stop()
        ctx.pg = None


def static(ctx):
    """Static files, 1 KiB and 1 MiB, wrk keep-alive: spindle-c (and spindle-c-epoll
    when --servers names it) against nginx."""
    opts = ctx.opts
    root = os.path.join(ctx.tmp, "static")
    os.makedirs(root, exist_ok=True)
    files = {"1KiB": "1k.bin", "1MiB": "1m.bin"}
    with open(os.path.join(root, "1k.bin"), "wb") as f:
        f.write(os.urandom(1024))
    with open(os.path.join(root, "1m.bin"), "wb") as f:
        f.write(os.urandom(1 << 20))
    ps = [p for p in ctx.peers_for("hello", opts.servers) if p.name in ("spindle-c", "spindle-c-epoll", "nginx")]
    entries = [(p.name, make_server(ctx, p, "hello", opts.workers, ctx.server_cpus, "static", root=root), "hello")
               for p in ps]
    for e in entries:
        e[1].start()
        ctx.servers.append(e[1])
    up = []
    for label, srv, _ in entries:
        try:
            srv.wait_listening()
            time.sleep(0.2)
            status, body = fetch(srv.port, "/1k.bin")
            if status != 200 or len(body) != 1024:
                raise RuntimeError("GET /1k.bin answered %d with %d bytes" % (status, len(body)))
            up.append((label, srv))
        except (RuntimeError, OSError) as e:
            ctx.problem("static: %s did not come up: %s" % (label, e))
    conns = opts.connections[0]
    for variant, name in files.items():
        for r, (label, srv) in rounds(ctx, up):
            res = load.wrk("http://127.0.0.1:%d/%s" % (srv.port, name), srv, conns, opts.duration, ctx.lg_cpus)
            record(ctx, {"workload": "static", "variant": variant, "app": "static", "server": label,
                         "workers": opts.workers, "connections": conns, "round": r}, res)
            time.sleep(0.2)
    procs.stop_all([s for _, s in up])


def scaling(ctx):
    """1..N workers (N = CPUs). With fewer workers than CPUs the server gets
    CPUs 0..w-1 and the load generator the last CPU; with w = N the server
    may use every CPU, the load generator's included (flagged)."""
    opts = ctx.opts
    n = os.cpu_count()
    conns = opts.connections[0]
    for w in range(1, min(n, opts.max_workers) + 1):
        cpus = list(range(w)) if w < n else list(range(n))
        ps = [p for p in ctx.peers_for("hello", opts.scaling_servers)]
        entries = [(p.name, make_server(ctx, p, "hello", w, cpus, "scale"), "hello") for p in ps]
        up = start_checked(ctx, entries)
        warm_up(ctx, up)
        for r, (label, srv, _) in rounds(ctx, up):
            res = load.wrk("http://127.0.0.1:%d/" % srv.port, srv, conns, opts.duration, ctx.lg_cpus)
            if w >= n:
                res["note"] = (res.get("note", "") + " server shares its CPUs with the load generator").strip()
            record(ctx, {"workload": "scaling", "variant": "%d workers" % w, "app": "hello", "server": label,
                         "workers": w, "connections": conns, "round": r}, res)
            time.sleep(0.2)
        procs.stop_all([s for _, s, _ in up])


def instructions(ctx):
    """Instructions per keep-alive request under callgrind (load.instructions),
    and per function: RESULTS/instructions.SERVER.functions.tsv, with the
    longer run's profile in RESULTS/instructions.SERVER.callgrind.out."""
    opts = ctx.opts
    for p in ctx.peers_for("hello", opts.instruction_servers):
        if p.name in ("node",):
            ctx.problem("instructions: node is not measured (its JIT makes callgrind counts meaningless)")
            continue
        python = p.kind == "wsgi" or p.name == "tornado"
        n1, n2 = (opts.ir_python if python else opts.ir_native)

        def mk(prefix, d, p=p):
            port = procs.free_port()
            argv, env, cwd = p.command("hello", port, 1, d)
            return procs.Server(p.name, prefix + argv, port, ctx.server_cpus, d, env=env, cwd=cwd).start()

        log("instructions: %s under callgrind (ab -k -c 10, %d then %d requests)" % (p.name, n1, n2))
        keep = os.path.join(opts.out, "instructions." + p.name)
        try:
            res = load.instructions(mk, n1, n2, ctx.lg_cpus, keep=keep)
        except (RuntimeError, OSError) as e:
            ctx.problem("instructions for %s failed: %s" % (p.name, e))
            continue
        # The hot path: self instructions per request by function.
        with open(keep + ".functions.tsv", "w") as f:
            f.write("instructions_per_request\tshare_pct\tfunction\n")
            for ir, share, fn in res["functions"]:
                f.write("%s\t%s\t%s\n" % (ir, share, fn))
        record(ctx, {"workload": "instructions", "variant": "keep-alive", "app": "hello", "server": p.name,
                     "workers": 1, "connections": 10, "round": 1}, res)
    if "spindle-c" in opts.servers:
        parse = parse_ir.row(ctx)  # the head parser alone (issue 34: < 1,000)
        if parse:
            record(ctx, {}, parse)


def _session_servers(ctx, redis_url=None):
    """(server name, store name, argv, env) of each session demo to measure:
    the C demo when spindle-c is compared, its WSGI twin when spindle is;
    the Redis store too when redis_url is given."""
    opts = ctx.opts
    stores = [("memory", "memory"), ("sqlite", "sqlite:" + os.path.join(ctx.tmp, "sessions.db"))]
    if redis_url:
        stores.append(("redis", redis_url))
    out = []
    if "spindle-c" in opts.servers:
        if ctx.sessions_bin:
            for name, store in stores:
                out.append(("spindle-c", name, lambda port, s=store: [ctx.sessions_bin, "127.0.0.1:%d" % port,
                                                                      s], None))
        else:
            ctx.problem("sessions skipped for spindle-c: build/examples/sessions not built (make)")
    if "spindle" in opts.servers:
        for name, store in stores:
            store = store.replace("sessions.db", "sessions-py.db")
            out.append(("spindle", name, lambda port, s=store: [
                peers.PY, "-m", "spindle", "sessions_app:application", "--chdir", peers.WSGI_APPS,
                "--bind", "127.0.0.1:%d" % port, "--workers", "0", "--sessions", s, "--log-level",
                "warning"], {"PYTHONPATH": ctx.spindle_py}))
    return out


def _sessions_redis(ctx):
    """(the Redis server, its URL) for the Redis store's rows, on the load
    generator's CPUs; (None, None), said in the report, when there is none."""
    if not shutil.which("redis-server"):
        ctx.problem("sessions: redis-server not installed (scripts/deps.sh bench): the Redis store is not measured")
        return None, None
    port = procs.free_port()
    redis = procs.redis_server(port, ctx.lg_cpus, os.path.join(ctx.tmp, "sessions-redis"))
    redis.start()
    ctx.servers.append(redis)
    try:
        redis.wait_listening(15)
        return redis, "redis://127.0.0.1:%d" % port
    except (RuntimeError, OSError) as e:
        ctx.problem("sessions: redis-server did not come up, the Redis store is not measured: %s" % e)
        redis.stop()
        return None, None


def sessions(ctx):
    """Eurasia's session test: the session demo (examples/sessions.c, and its
    WSGI twin bench/wsgi_apps/sessions_app.py for the Python binding) with a
    new session per request — wrk sends no cookie, so every request makes a
    session, sets its counter and stores it — for the memory, the SQLite and
    (where redis-server is installed) the Redis store, beside the plain hello
    world the same program serves (GET /hello). One process each (no
    workers), wrk keep-alive. The Redis server runs on the load generator's
    CPUs, as it would on a machine of its own: its work is not the server's."""
    opts = ctx.opts
    conns = opts.connections[0]
    up = []
    redis, redis_url = _sessions_redis(ctx)
    for server, name, argv_of, env in _session_servers(ctx, redis_url):
        port = procs.free_port()
        workdir = os.path.join(ctx.tmp, "sessions-%s-%s" % (server, name))
        os.makedirs(workdir, exist_ok=True)
        srv = procs.Server(server, argv_of(port), port, ctx.server_cpus, workdir, env=env)
        srv.start()
        ctx.servers.append(srv)
        try:
            srv.wait_listening()
            status, body = fetch(port)
            if status != 200 or not body.startswith(b"visit 1 of session"):
                raise RuntimeError("GET / answered %d %r" % (status, body[:80]))
            up.append((server, name, srv))
        except (RuntimeError, OSError) as e:
            ctx.problem("sessions: the %s demo with the %s store did not come up: %s" % (server, name, e))
            srv.stop()
    runs = []
    for server, name, srv in up:
        if name == "memory":
            runs.append((server, "hello", srv, "/hello", load.wrk))
        runs.append((server, "%s store" % name, srv, "/", load.wrk))
        # A returning visitor: one session's cookie on every request, so each
        # one loads the session and stores it again (concurrent visits of one
        # session: the last write wins, as documented).
        try:
            cookie = session_cookie(srv.port)
            runs.append((server, "%s store, returning visitor" % name, srv, "/",
                         functools.partial(load.wrk, headers=["Cookie: " + cookie])))
        except (RuntimeError, OSError) as e:
            ctx.problem("sessions: no cookie from the %s demo with the %s store: %s" % (server, name, e))
        if name == "memory":  # the seed's Eurasia run: ab -c 1000, a connection per request
            runs.append((server, "memory store, ab -c 1000", srv, "/", load.ab))
    for r, (server, variant, srv, path, gen) in rounds(ctx, runs):
        if not srv.alive():
            ctx.problem("sessions: the %s demo died during the %s runs:\n%s" % (server, variant, srv.log_tail()))
            continue
        c = 1000 if gen is load.ab else conns
        res = gen("http://127.0.0.1:%d%s" % (srv.port, path), srv, c, opts.duration, ctx.lg_cpus)
        record(ctx, {"workload": "sessions", "variant": variant, "app": "sessions", "server": server,
                     "workers": 0, "connections": c, "round": r}, res)
        time.sleep(0.2)
    procs.stop_all([s for _, _, s in up])
    if redis_url:
        procs.stop_all([redis])


def _parked_phase(ctx, name, npoll, nws, no_guard, seconds, server="spindle-c"):
    """One chat server (examples/chat, or the uvicorn peer bench/peers/uvicorn_parked.py),
    NPOLL long-polling clients and NWS WebSockets parked on it
    (bench/parked_client.py, one process per kind), a broadcast every
    second: memory before and with the clients, and each broadcast's time to
    reach every client. Returns a row (or None if the server did not start)."""
    import json
    import resource
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    port = procs.free_port()
    workdir = os.path.join(ctx.tmp, "parked-%s-%s-%s" % (server, name, "noguard" if no_guard else "guard"))
    os.makedirs(workdir, exist_ok=True)
    argv = parked_run.server_argv(ctx, server, port, no_guard, nofile)
    srv = procs.Server(server, argv, port, ctx.server_cpus, workdir)
    srv.start()
    ctx.servers.append(srv)

    def stats():
        try:
            return json.loads(fetch(port, "/stats")[1])
        except (OSError, ValueError):
            return {}

    def mem():
        rss, pss = procs.tree_memory_kb(srv.pid)
        try:
            with open("/proc/%d/maps" % srv.pid) as f:
                maps = sum(1 for _ in f)
        except OSError:
            maps = 0
        return rss, pss, maps

    try:
        srv.wait_listening()
    except RuntimeError as e:
        ctx.problem("parked: the %s server did not come up: %s" % (server, e))
        srv.stop()
        return None
    time.sleep(0.5)
    before = mem()
    clients = parked_run.start_clients(workdir, port, npoll, nws, seconds)
    # Parked pollers come and go around each broadcast: sample and keep the
    # sample with the most connections parked in handlers.
    best, after, mid = -1, before, {}
    # The memory sample is bracketed by two /stats: the fewer in handlers
    # counts (a poll client is READY once its requests are sent, before the
    # chat has them all parked, and one sample had 2,700 stacks for 10,000).
    for _ in range(10 if seconds >= 5 else 4):
        time.sleep(0.3)
        st0 = stats()
        m, st = mem(), stats()
        k = min(st0.get("ws", 0) + st0.get("parked", 0), st.get("ws", 0) + st.get("parked", 0))
        if k > best:
            best, after, mid = k, m, dict(st, ws=min(st0.get("ws", 0), st.get("ws", 0)),
                                          parked=min(st0.get("parked", 0), st.get("parked", 0)))
    results = parked_run.collect(clients, seconds)
    end = stats()
    srv.stop()
    return parked_run.row(ctx, srv, workdir, server, name, npoll, nws, no_guard, results,
                          before, after, mid, end)


def parked(ctx):
    """Long-polling clients and WebSockets parked on one chat process
    (examples/chat, one loop) with a broadcast every second, with and without
    guard pages on the coroutine stacks: memory per parked connection and the
    time to deliver one broadcast to all (what bench/parked.sh measured).
    Smoke runs only the mixed phase."""
    import resource
    opts = ctx.opts
    if "spindle" in opts.servers:
        # A WSGI handler parked in spindle.websocket's receive (issue 34: ≤ 12 KB each).
        log("parked: %d WebSockets in a WSGI handler (bench/wsgi_apps/parked_py.py)" % min(opts.parked_clients, 1000))
        py = py_parked.row(ctx, min(opts.parked_clients, 1000))
        if py:
            record(ctx, {}, py)
    if "spindle-c" not in opts.servers:
        return  # likewise
    if not ctx.chat_bin:
        ctx.problem("parked skipped: build/examples/chat not built (make)")
        return
    n, seconds = opts.parked_clients, opts.parked_seconds
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if n + 64 > nofile:
        ctx.problem("parked: %d clients do not fit the open-files limit %d: %d instead" % (n, nofile, nofile - 64))
        n = nofile - 64
    # The server holds one fd per client plus a few of its own: the mixed
    # phase takes what fits.
    m = min(n, (nofile - 64) // 2)
    phases = [("mixed", m, m)] if opts.smoke else [("poll", n, 0), ("ws", 0, n), ("mixed", m, m)]
    # spindle with and without guard pages, then uvicorn beside it (the
    # same clients, the same machine) unless this is a smoke run.
    peer = not opts.smoke and parked_run.python_peer(ctx)
    runs = [("spindle-c", False), ("spindle-c", True)] + ([("uvicorn", False)] if peer else [])
    for server, no_guard in runs:
        for name, npoll, nws in phases:
            log("parked: %d polling + %d WebSockets, %s, %s s of broadcasts" % (
                npoll, nws, "uvicorn" if server == "uvicorn" else "no guard pages" if no_guard else "guard pages",
                seconds))
            row = _parked_phase(ctx, name, npoll, nws, no_guard, seconds, server)
            if row:
                ctx.rows.append(row)
                log("parked %-40s %d parked, %d client errors, RSS %d -> %d KiB (%s B/conn), broadcasts to all "
                    "%d of %d, delivery median %s ms" % (
                        row["variant"], row["held_open"], row["client_errors"], row["rss_kb_before"],
                        row["rss_kb_after"], row["bytes_per_connection"], row["delivered_to_all"],
                        row["broadcasts"], row["delivery_ms_median"]))


def syscalls(ctx):
    """Syscalls per request (strace -c -f on the server's processes), hello
    world with keep-alive (ab -k) and a connection per request (ab), the
    same fixed number of requests (--syscall-requests) for every server: a
    short run of its own, as strace slows the server (not the timed runs)."""
    import shutil
    opts = ctx.opts
    if not shutil.which("strace"):
        ctx.problem("syscalls skipped: strace missing (Debian: strace)")
        return
    conns = opts.connections[0]
    ps = ctx.peers_for("hello", opts.syscall_servers)
    up = start_checked(ctx, [(p.name, make_server(ctx, p, "hello", opts.workers, ctx.server_cpus, "syscalls"), "hello")
                             for p in ps])
    warm_up(ctx, up)
    for wl in ("keepalive", "close"):
        for label, srv, _ in up:
            url = "http://127.0.0.1:%d/" % srv.port

            def go(url=url, srv=srv, wl=wl):
                return load.ab_count(url, srv, conns, opts.syscall_requests, ctx.lg_cpus, wl == "keepalive")
            res = load.syscalls(srv, go, os.path.join(ctx.tmp, "strace-%s-%s.txt" % (label, wl)))
            record(ctx, {"workload": "syscalls", "variant": wl, "app": "hello", "server": label,
                         "workers": opts.workers, "connections": conns, "round": 1}, res)
            time.sleep(0.2)
    procs.stop_all([s for _, s, _ in up])


def h2(ctx):
    """HTTP/2 (h2c): h2load -c100 -m10 hello world, spindle-c vs nginx and
    h2o, then memory per idle HTTP/2 connection (bench/harness/h2bench.py)."""
    h2bench.run(ctx)
