"""The h2 workload of bench/run: HTTP/2 over cleartext (h2c, prior
knowledge), h2load -c100 -m10 hello world against spindle-c, nginx
(`listen ... http2` without ssl) and h2o, requests/s and server CPU per
request; then memory per idle HTTP/2 connection (one request answered on
each, the connection kept open). The TLS variant ("h2" by ALPN) comes with
TLS listeners."""
import os
import re
import shutil
import struct
import time

from . import load, peers, procs

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
H2O = shutil.which("h2o") or "/usr/bin/h2o"
H2LOAD = shutil.which("h2load") or "/usr/bin/h2load"
# GET / on stream 1 for :authority 127.0.0.1, HPACK without the dynamic table:
# :method GET (2), :scheme http (6), :path / (4), :authority (literal, index 1).
GET_BLOCK = b"\x82\x86\x84\x01\x09127.0.0.1"


def frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", sid) + payload


def make_cert(tmp):
    """One self-signed P-256 certificate for every server of the TLS variant."""
    import subprocess
    cert, key = os.path.join(tmp, "h2-cert.pem"), os.path.join(tmp, "h2-key.pem")
    if not os.path.exists(cert):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-days", "2", "-subj", "/CN=localhost", "-keyout", key, "-out", cert],
                       check=True, capture_output=True, timeout=30)
    return cert, key


def commands(ctx, name, port, workers, workdir, tls=None):
    """(argv, env, cwd) of NAME serving hello world on PORT over h2c, or
    with TLS=(cert, key) over TLS with ALPN h2."""
    if name == "spindle-c":
        argv, env, cwd = peers.SpindleC(ctx).command("hello", port, workers, workdir)
        if tls:
            argv += ["--certfile", tls[0], "--keyfile", tls[1]]
        return argv, env, cwd
    if name == "nginx":
        ssl = ("ssl_certificate %s; ssl_certificate_key %s; ssl_protocols TLSv1.2 TLSv1.3; "
               "ssl_session_cache shared:S:10m; " % tls) if tls else ""
        body = ('server { listen 127.0.0.1:%(port)d ' + ("ssl " if tls else "") + 'http2; ' + ssl +
                'default_type text/plain; http2_max_concurrent_streams 128; '
                'location / { return 200 "Hello world!"; } }')
        return peers.nginx_conf(workdir, port, workers, body), {}, workdir
    if name == "h2o":
        root = os.path.join(workdir, "root")
        os.makedirs(root, exist_ok=True)
        with open(os.path.join(root, "index.txt"), "w") as f:
            f.write("Hello world!")
        conf = os.path.join(workdir, "h2o.conf")
        import pwd
        user = pwd.getpwuid(os.getuid()).pw_name  # as root, h2o would switch to nobody
        with open(conf, "w") as f:
            f.write("user: %s\n" % user)
            f.write("listen:\n  host: 127.0.0.1\n  port: %d\n" % port)
            if tls:
                f.write("  ssl:\n    certificate-file: %s\n    key-file: %s\n" % tls)
            f.write("num-threads: %d\npid-file: %s/h2o.pid\n"
                    "error-log: %s/error.log\nhttp2-idle-timeout: 120\nfile.index: [ 'index.txt' ]\n"
                    "hosts:\n  default:\n    paths:\n      /:\n        file.dir: %s\n"
                    % (workers, workdir, workdir, root))
        return [H2O, "-c", conf], {}, workdir
    return None


def versions(ctx):
    out = {}
    if os.access(H2O, os.X_OK):
        out["h2o"] = peers.out_of([H2O, "-v"]).split("\n")[0].replace("h2o version ", "")
    return out


def h2load(server, conns, streams, duration, lg_cpus, scheme="http"):
    """h2load -t1 against server (h2c, or h2 by ALPN over https) for DURATION seconds."""
    argv = ["taskset", "-c", procs.cpu_list(lg_cpus), H2LOAD, "-t1", "-c%d" % conns, "-m%d" % streams,
            "-D%d" % duration, "--warm-up-time=1", "%s://127.0.0.1:%d/" % (scheme, server.port)]
    r = load.run_measured(argv, server, duration + 40)
    text = r["text"]
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                  r"(\d+) errored, (\d+) timeout", text)
    codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text)
    fin = re.search(r"finished in ([\d.]+)(m?s)", text)
    if not m or not fin:
        return load._finish(r, 0, 0, 0, {"note": "h2load printed no result: %s" % text.strip()[-300:]})
    secs = float(fin.group(1)) / (1000 if fin.group(2) == "ms" else 1)
    ok = int(m.group(4))
    non2xx = sum(int(x) for x in codes.groups()[1:]) if codes else 0
    # CPU per request over the whole run, warm-up included: the rate only over the measured part.
    res = load._finish(r, ok, int(m.group(5)) + int(m.group(6)) + int(m.group(7)), non2xx,
                       {"duration_s": secs})
    return res


def _answered(data):
    """True once the bytes hold stream 1's END_STREAM (DATA or HEADERS)."""
    off = 0
    while off + 9 <= len(data):
        length = int.from_bytes(data[off:off + 3], "big")
        ftype, flags, sid = data[off + 3], data[off + 4], int.from_bytes(data[off + 5:off + 9], "big") & 0x7fffffff
        if off + 9 + length > len(data):
            return False
        if sid == 1 and ftype in (0, 1) and flags & 1:
            return True
        off += 9 + length
    return False


def hold_idle_h2(port, count, settle=1.0, timeout=60):
    """COUNT h2c connections, each with GET / answered (its SETTINGS ACKed,
    as a client does), kept open: load.hold_idle with HTTP/2's bytes."""
    hello = PREFACE + frame(4, 0, 0) + frame(1, 0x5, 1, GET_BLOCK)
    socks, still, _ = load.hold_idle(port, count, settle, timeout, request=hello, answered=_answered,
                                     on_answer=lambda s: s.send(frame(4, 1, 0)))
    return socks, still


def memory_per_h2_connection(server, count):
    """load.memory_per_connection with HTTP/2 connections (one stream
    answered on each)."""
    return load.memory_per_connection(server, count, hold=lambda port, n: hold_idle_h2(port, n) + ("",))


def start_h2(ctx, entries, timeout=30, scheme="http"):
    """Like workloads.start_checked, but the check is GET / over h2c (nginx's
    h2c listener speaks nothing else)."""
    import subprocess
    ok = []
    for label, srv in entries:
        srv.start()
        ctx.servers.append(srv)
    for label, srv in entries:
        try:
            srv.wait_listening(timeout)
            deadline = time.monotonic() + timeout
            while True:
                how = ["--http2-prior-knowledge"] if scheme == "http" else ["--http2", "-k"]
                r = subprocess.run(["curl", "-s", "--max-time", "3"] + how +
                                   ["%s://127.0.0.1:%d/" % (scheme, srv.port)], capture_output=True, timeout=10)
                if r.stdout == b"Hello world!":
                    break
                if time.monotonic() > deadline or not srv.alive():
                    raise RuntimeError("GET / over h2c answered %r\n%s" % (r.stdout[:80], srv.log_tail()))
                time.sleep(0.2)
            ok.append((label, srv, "hello"))
        except RuntimeError as e:
            ctx.problem("h2: %s did not come up: %s" % (label, e))
            srv.stop()
    return ok


def run(ctx):
    from . import workloads as w  # record and rounds (it imports this module)
    opts = ctx.opts
    names = [n for n in ("spindle-c", "nginx", "h2o") if n in opts.h2_servers]
    if "h2o" in names and not os.access(H2O, os.X_OK):
        ctx.problem("h2 skipped h2o: h2o missing (Debian: h2o)")
        names.remove("h2o")
    if not os.access(H2LOAD, os.X_OK):
        ctx.problem("h2 skipped: h2load missing (Debian: nghttp2-client)")
        return
    ctx.versions.update({k: v for k, v in versions(ctx).items() if k in names})

    def make(name, tag, tls=None):
        port = procs.free_port()
        workdir = os.path.join(ctx.tmp, "%s-%s" % (tag, name))
        os.makedirs(workdir, exist_ok=True)
        argv, env, cwd = commands(ctx, name, port, opts.workers, workdir, tls)
        return procs.Server(name, argv, port, ctx.server_cpus, workdir, env=env, cwd=cwd)

    conns, streams = 100, 10
    try:
        cert = make_cert(ctx.tmp)
    except (OSError, RuntimeError) as e:
        ctx.problem("h2: no certificate for the TLS variant: %s" % e)
        cert = None
    for variant, scheme, tls in (("h2c", "http", None), ("h2 TLS", "https", cert)):
        if scheme == "https" and not cert:
            continue
        up = start_h2(ctx, [(n, make(n, "h2-" + scheme, tls)) for n in names], scheme=scheme)
        time.sleep(0.5)
        for r, (label, srv, _) in w.rounds(ctx, up):
            res = h2load(srv, conns, streams, opts.duration, ctx.lg_cpus, scheme)
            w.record(ctx, {"workload": "h2", "variant": "%s c=%d m=%d" % (variant, conns, streams),
                           "app": "hello", "server": label, "workers": opts.workers, "connections": conns,
                           "round": r}, res)
            time.sleep(0.2)
        procs.stop_all([s for _, s, _ in up])
    fresh = start_h2(ctx, [(n, make(n, "h2mem")) for n in names])
    time.sleep(0.5)
    for label, srv, _ in fresh:
        res = memory_per_h2_connection(srv, opts.idle_connections)
        w.record(ctx, {"workload": "h2memory", "variant": "%d idle h2c" % opts.idle_connections, "app": "hello",
                       "server": label, "workers": opts.workers, "round": 1}, res)
    procs.stop_all([s for _, s, _ in fresh])
