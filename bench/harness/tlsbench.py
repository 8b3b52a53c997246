"""The tls workload of bench/run (issue 20): spindle-c (spindle-c-epoll too when
--servers names it) and nginx with the same ECDSA P-256 certificate, X25519 and
TLS 1.3 TLS_AES_128_GCM_SHA256 (the servers are configured for it and every
client is held to it by an OPENSSL_CONF of its own), one worker each, pinned
like every workload: keep-alive hello world (wrk), a new connection per request
with a full handshake (ab) and sequential full and resumed handshakes (openssl
s_time -new / -reuse), memory per idle TLS keep-alive connection (tls_idle.py),
and a 1 MiB static file (wrk)."""
import os
import re
import ssl
import subprocess
import time
import urllib.request

from . import load, peers, procs, report
from .workloads import log, make_server, record, rounds

SUITE, GROUP = "TLS_AES_128_GCM_SHA256", "X25519"
WANT = "TLSv1.3 %s %s" % (SUITE, GROUP)
CLIENT_CNF = """# The tls workload's clients (wrk, ab, openssl s_time and s_client,
# tls_idle.py): TLS 1.3, one suite, one group, whatever the server prefers.
openssl_conf = openssl_init
[openssl_init]
ssl_conf = ssl_sect
[ssl_sect]
system_default = system_default_sect
[system_default_sect]
MinProtocol = TLSv1.3
Ciphersuites = %s
Groups = %s
""" % (SUITE, GROUP)
IDLE_CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tls_idle.py")


def make_cert(d):
    """A self-signed ECDSA P-256 certificate for localhost and 127.0.0.1."""
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    if r.returncode:
        raise RuntimeError("openssl req: " + r.stdout.decode(errors="replace")[-300:])
    cnf = os.path.join(d, "client.cnf")
    with open(cnf, "w") as f:
        f.write(CLIENT_CNF)
    return {"cert": cert, "key": key}, {"OPENSSL_CONF": cnf}


def fetch(port, path="/"):
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with urllib.request.urlopen("https://127.0.0.1:%d%s" % (port, path), timeout=5, context=ctx) as r:
        return r.status, r.read()


def parse_s_client(text):
    """'TLSv1.3 SUITE GROUP' from openssl s_client's report, or None."""
    m = re.search(r"^New, (TLSv[0-9.]+), Cipher is (\S+)", text, re.M)
    g = re.search(r"^Server Temp Key: ([^,\s]+)", text, re.M)
    return "%s %s %s" % (m.group(1), m.group(2), g.group(1) if g else "?") if m else None


def negotiated(port, env):
    r = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-servername", "localhost"],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=20,
                       env=dict(os.environ, **env))
    return parse_s_client(r.stdout.decode(errors="replace"))


def parse_s_time(text):
    """openssl s_time's report: {connections, user_s, reused, full} (one
    'r' or '*' per connection it made), or None."""
    m = re.search(r"^(\d+) connections in ([0-9.]+)s;", text, re.M)
    if not m:
        return None
    marks = "".join(line for line in text.splitlines() if re.fullmatch(r"[r*]+", line.strip()))
    return {"connections": int(m.group(1)), "user_s": float(m.group(2)), "reused": marks.count("r"),
            "full": marks.count("*")}


def s_time(srv, mode, duration, lg_cpus, env):
    """Sequential handshakes, one GET / (HTTP/1.0) per connection: MODE
    'new' (full handshakes) or 'reuse' (the first session resumed)."""
    argv = ["taskset", "-c", procs.cpu_list(lg_cpus), "openssl", "s_time", "-connect", "127.0.0.1:%d" % srv.port,
            "-" + mode, "-www", "/", "-time", str(duration)]
    r = load.run_measured(argv, srv, duration + 30, env)
    f = parse_s_time(r["text"])
    if f is None:
        return load._finish(r, 0, 1, 0, {"note": "s_time printed no result: " + r["text"].strip()[-300:]})
    row = load._finish(r, f["connections"], 0, 0, {})
    want = f["connections"] - 1 if mode == "reuse" else 0  # -reuse: the first one is a full handshake
    got = f["reused"]
    if (mode == "reuse" and got < want) or (mode == "new" and got):
        row["note"] = ("%d of %d handshakes resumed" % (got, f["connections"]) + "; " + row.get("note", "")).strip("; ")
        if mode == "reuse":
            row["errors"] = want - got  # a resumption refused is this variant's failure
    return row


def ab(url, srv, conns, duration, lg_cpus, env):
    """ab over https: a new connection, a new SSL and so a full handshake per
    request (ab never offers a session); its SSL/TLS line is checked."""
    argv = ["taskset", "-c", procs.cpu_list(lg_cpus), "ab", "-r", "-q", "-t", str(duration), "-n", "50000000",
            "-s", "10", "-c", str(conns), url]
    r = load.run_measured(argv, srv, duration + 40, env)
    f = load.parse_ab(r["text"])
    if f is None:
        return load._finish(r, 0, 0, 0, {"note": "ab printed no result: " + r["text"].strip()[-300:]})
    row = load._finish(r, f["complete"] - f["failed"], f["failed"], f["non2xx"],
                       {"duration_s": f["taken_s"] or r["wall_s"], "p50_ms": f["p50_ms"], "p99_ms": f["p99_ms"],
                        "max_ms": f["max_ms"]})
    m = re.search(r"^SSL/TLS Protocol:\s+(\S+)", r["text"], re.M)
    if not m or not m.group(1).startswith("TLSv1.3," + SUITE):
        row["note"] = ("ab negotiated %s" % (m.group(1) if m else "nothing") + "; " + row.get("note", "")).strip("; ")
    return row


def wrk(url, srv, conns, duration, lg_cpus, env):
    argv = ["taskset", "-c", procs.cpu_list(lg_cpus), "wrk", "-t1", "-c%d" % conns, "-d%ds" % duration,
            "--timeout", "10s", "-s", load.LUA, url]
    return load._from_bench_line(load.run_measured(argv, srv, duration + 30, env), "wrk")


def idle(srv, count, lg_cpus, env):
    """Server memory per idle TLS keep-alive connection (RSS and PSS of its
    tree): COUNT connections each after one GET /, held by tls_idle.py."""
    before = procs.tree_memory_kb(srv.pid)
    p = subprocess.Popen(["taskset", "-c", procs.cpu_list(lg_cpus), peers.PY, IDLE_CLIENT, str(srv.port),
                          str(count)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         env=dict(os.environ, **env))
    line, said, deadline = b"", [], time.monotonic() + 180
    while time.monotonic() < deadline and not line.startswith(b"READY"):
        line = p.stdout.readline()
        if not line:
            break  # it exited
        said.append(line)
    after = procs.tree_memory_kb(srv.pid)
    try:
        p.stdin.close()
        p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    m = re.match(rb"READY held=(\d+) errors=(\d+)", line)
    held = int(m.group(1)) if m else 0
    row = {"connections": count, "held_open": held, "rss_kb_before": before[0], "rss_kb_after": after[0],
           "pss_kb_before": before[1], "pss_kb_after": after[1]}
    if held:
        row["bytes_per_connection"] = round((after[0] - before[0]) * 1024 / held)
        row["pss_bytes_per_connection"] = round((after[1] - before[1]) * 1024 / held)
    if held < count:
        row["note"] = "%d of %d held open (%s)" % (held, count, b" ".join(said[-3:]).decode(errors="replace").strip()
                                                    or "the client printed nothing")
    return row


def start(ctx, ps, tag, tls, env, root=None, path="/"):
    """Starts a TLS server per peer, checks GET PATH over https and the
    negotiated protocol, suite and group. [(label, server)]."""
    opts, up = ctx.opts, []
    entries = []
    for p in ps:
        srv = make_server(ctx, p, "hello", opts.workers, ctx.server_cpus, tag, tls=tls, root=root)
        ctx.tls_commands.setdefault(p.name, " ".join(srv.argv).replace(ctx.tmp, "$TMP"))
        srv.start()
        ctx.servers.append(srv)
        entries.append((p.name, srv))
    for label, srv in entries:
        try:
            srv.wait_listening()
            deadline, err = time.monotonic() + 20, ""
            while True:
                try:
                    status, body = fetch(srv.port, path)
                    if status == 200 and (root or body == peers.HELLO):
                        break
                    err = "answered %d %r" % (status, body[:80])
                except OSError as e:
                    err = str(e)
                if time.monotonic() > deadline or not srv.alive():
                    raise RuntimeError("GET %s over https: %s\n%s" % (path, err, srv.log_tail()))
                time.sleep(0.2)
            got = negotiated(srv.port, env)
            ctx.tls_negotiated[label] = got
            if got != WANT:
                ctx.problem("tls: %s negotiated %s, not %s" % (label, got, WANT))
            up.append((label, srv))
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
            ctx.problem("%s did not come up (tls): %s" % (label, e))
            srv.stop()
    return up


def warm_up(up, lg_cpus, env):
    for _, srv in up:
        subprocess.run(["taskset", "-c", procs.cpu_list(lg_cpus), "ab", "-k", "-r", "-q", "-s", "10", "-c", "10",
                        "-n", "500", "https://127.0.0.1:%d/" % srv.port], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60, env=dict(os.environ, **env))


def variants(conns):
    return {"keepalive": "keep-alive c=%d" % conns, "full": "full handshake c=%d (ab)" % conns,
            "full_seq": "full handshake, sequential (s_time -new)",
            "resumed": "resumed handshake, sequential (s_time -reuse)", "static": "1MiB static c=%d" % conns}


def instructions(ctx, ps, certs, env, base):
    """Instructions per TLS keep-alive request (load.instructions: callgrind,
    ab -k -c 10 over https, two runs subtracted), the hot path of each server
    in RESULTS/instructions.tls.SERVER.functions.tsv. A smoke run checks the
    path on spindle-c only (valgrind's start-up is most of its time)."""
    n1, n2 = ctx.opts.ir_native
    for p in [p for p in ps if p.name == "spindle-c" or not ctx.opts.smoke]:
        def mk(prefix, d, p=p):
            port = procs.free_port()
            argv, penv, cwd = p.command("hello", port, 1, d, tls=certs)
            return procs.Server(p.name, prefix + argv, port, ctx.server_cpus, d, env=penv, cwd=cwd).start()

        log("tls: %s under callgrind (ab -k -c 10 over https, %d then %d requests)" % (p.name, n1, n2))
        keep = os.path.join(ctx.opts.out, "instructions.tls." + p.name)
        try:
            res = load.instructions(mk, n1, n2, ctx.lg_cpus, keep=keep, url="https://127.0.0.1:%d/", env=env)
        except (RuntimeError, OSError) as e:
            ctx.problem("tls instructions for %s failed: %s" % (p.name, e))
            continue
        with open(keep + ".functions.tsv", "w") as f:
            f.write("instructions_per_request\tshare_pct\tfunction\n")
            for ir, share, fn in res["functions"]:
                f.write("%s\t%s\t%s\n" % (ir, share, fn))
        res.pop("functions")
        ctx.rows.append(dict(base, variant="keep-alive, instructions (callgrind)", server=p.name, round=1,
                             connections=10, **res))
        log("tls %s: %s instructions/request" % (p.name, res["instructions_per_request"]))


def syscalls(ctx, ps, certs, env, base):
    """Syscalls per TLS keep-alive request (load.syscalls: strace -c -f on a
    fresh server, ab -k -c 10, --syscall-requests requests): where the
    kernel's share of a request differs (reads that return EAGAIN, a record
    header read apart, an answer in two writes). Skipped without strace."""
    import shutil
    if not shutil.which("strace"):
        ctx.problem("tls syscalls skipped: strace missing (Debian: strace)")
        return
    up = start(ctx, ps, "tls-syscalls", certs, env)
    warm_up(up, ctx.lg_cpus, env)
    for label, srv in up:
        def go(srv=srv):
            return load.ab_count("https://127.0.0.1:%d/" % srv.port, srv, 10, ctx.opts.syscall_requests,
                                 ctx.lg_cpus, True, env)
        res = load.syscalls(srv, go, os.path.join(ctx.tmp, "strace-tls-%s.txt" % label))
        record(ctx, dict(base, variant="keep-alive, syscalls (strace)", server=label, round=1, connections=10), res)
        log("tls %s: %s syscalls/request (%s)" % (label, res.get("syscalls_per_request"), res.get("syscalls")))
        time.sleep(0.2)
    procs.stop_all([s for _, s in up])


def tls(ctx):
    opts = ctx.opts
    ps = [p for p in ctx.peers_for("hello", opts.servers) if p.name in ("spindle-c", "spindle-c-epoll", "nginx")]
    if not ps:
        return
    d = os.path.join(ctx.tmp, "tls")
    os.makedirs(d, exist_ok=True)
    certs, env = make_cert(d)
    conns, names = opts.connections[0], variants(opts.connections[0])
    base = {"workload": "tls", "app": "hello", "workers": opts.workers, "connections": conns}
    up = start(ctx, ps, "tls", certs, env)
    warm_up(up, ctx.lg_cpus, env)
    runs = [("keepalive", lambda s: wrk("https://127.0.0.1:%d/" % s.port, s, conns, opts.duration, ctx.lg_cpus, env)),
            ("full", lambda s: ab("https://127.0.0.1:%d/" % s.port, s, conns, opts.duration, ctx.lg_cpus, env)),
            ("full_seq", lambda s: s_time(s, "new", opts.duration, ctx.lg_cpus, env)),
            ("resumed", lambda s: s_time(s, "reuse", opts.duration, ctx.lg_cpus, env))]
    for key, go in runs:
        for r, (label, srv) in rounds(ctx, up):
            if not srv.alive():
                ctx.problem("%s died during the tls runs:\n%s" % (label, srv.log_tail()))
                continue
            record(ctx, dict(base, variant=names[key], server=label, round=r,
                             connections=conns if key in ("keepalive", "full") else 1), go(srv))
            time.sleep(0.2)
    procs.stop_all([s for _, s in up])
    # Idle connections on fresh servers (as the memory workload), then the
    # static file.
    fresh = start(ctx, ps, "tls-idle", certs, env)
    for label, srv in fresh:
        res = idle(srv, opts.idle_connections, ctx.lg_cpus, env)
        row = dict(base, variant="%d idle" % opts.idle_connections, server=label, round=1, **res)
        ctx.rows.append(row)
        log("tls %s idle: %s of %s held, RSS %s -> %s KiB, %s bytes/connection %s" % (
            label, row["held_open"], row["connections"], row["rss_kb_before"], row["rss_kb_after"],
            row.get("bytes_per_connection", "-"), row.get("note", "")))
    procs.stop_all([s for _, s in fresh])
    root = os.path.join(d, "static")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "1m.bin"), "wb") as f:
        f.write(os.urandom(1 << 20))
    st = start(ctx, ps, "tls-static", certs, env, root=root, path="/1m.bin")
    for r, (label, srv) in rounds(ctx, st):
        res = wrk("https://127.0.0.1:%d/1m.bin" % srv.port, srv, conns, opts.duration, ctx.lg_cpus, env)
        record(ctx, dict(base, variant=names["static"], server=label, round=r), res)
        time.sleep(0.2)
    procs.stop_all([s for _, s in st])
    syscalls(ctx, ps, certs, env, base)
    instructions(ctx, ps, certs, env, base)


def section(ctx, summary):
    """bench.md's tls section: how it ran, the throughput table, the idle table."""
    out = ["Same self-signed ECDSA P-256 certificate on both; every client is held by its own OPENSSL_CONF to "
           "TLS 1.3, %s, %s (negotiated, by openssl s_client: %s). keep-alive and 1MiB static: wrk -t1; full "
           "handshake: ab (a new connection and a new SSL, no session offered, per request); sequential: openssl "
           "s_time -new / -reuse (one connection at a time, HTTP/1.0 GET /; -reuse resumes the first session, "
           "its 'r' marks are counted). Per request is per connection in the handshake rows. No kTLS on this "
           "kernel unless the server's log says otherwise." % (
               SUITE, GROUP, "; ".join("%s %s" % kv for kv in sorted(ctx.tls_negotiated.items())) or "–"), ""]
    out += ["| server | command |", "|---|---|"]
    out += ["| %s | `%s` |" % (n, c.replace(peers.ROOT + "/", "")) for n, c in sorted(ctx.tls_commands.items())]
    out.append("")
    rows = [s for s in summary if s["workload"] == "tls" and s["rps_median"] != ""
            and "callgrind" not in s["variant"] and "strace" not in s["variant"]]
    out += report.throughput_table(rows, "tls")
    ir_rows = [dict(r, workload="instructions") for r in ctx.rows if r["workload"] == "tls" and "callgrind" in r["variant"]]
    if ir_rows:
        out += ["", "User-space instructions per TLS keep-alive request (callgrind, ab -k -c 10 over https, the two "
                "runs subtracted; per function in `instructions.tls.SERVER.functions.tsv`):", ""]
        out += report.instructions_table(ir_rows)
    sc_rows = [dict(r, workload="syscalls") for r in ctx.rows if r["workload"] == "tls" and "strace" in r["variant"]]
    if sc_rows:
        out += ["", "Syscalls per TLS keep-alive request (strace -c -f, ab -k -c 10, the same requests for both):", ""]
        out += report.syscalls_table(sc_rows)
    idle_rows = [dict(r, workload="memory") for r in ctx.rows if r["workload"] == "tls" and "idle" in r["variant"]]
    if idle_rows:
        out += ["", "Idle TLS keep-alive connections (tls_idle.py: one GET / each, then held):", ""]
        out += report.memory_table(idle_rows)
    return out
