"""The performance targets of issues 6–9, 17 (ASGI), 20 (TLS), 21 (HTTP/2), 23 and 34, judged on a bench/run's
results.
The single-purpose scripts that used to judge them (vs-nginx.sh, static.sh,
idle.sh, instructions.sh, wsgi.sh, sessions.sh) are now thin calls of
bench/run, so the judging lives here: one row per target in targets.csv and
a "Targets" table in bench.md, "met" or "NOT met". A target whose servers or
workload were not in the run is "not run"; in a --smoke run (1 s runs, small
counts) every target is "not judged" but its figure is still computed.
bench/run --fail-on-targets exits 1 when a judged target is not met."""
import statistics

from .report import num

COLUMNS = ["target", "issue", "workload", "variant", "server", "versus", "metric", "value", "paired", "want",
           "verdict"]


def _summary(summary, wl, variant, server):
    return next((s for s in summary if s["workload"] == wl and s["variant"] == variant and s["server"] == server),
                None)


def _paired(rows, wl, variant, server, versus, key):
    """Median over rounds of SERVER's figure ÷ VERSUS's figure in the same
    round: cancels slow drift in the machine's load better than medians."""
    by = {}
    for r in rows:
        if r["workload"] == wl and r["variant"] == variant and r["server"] in (server, versus):
            by.setdefault(r.get("round"), {})[r["server"]] = num(r.get(key))
    ratios = [d[server] / d[versus] for d in by.values() if d.get(server) and d.get(versus)]
    return round(statistics.median(ratios), 3) if ratios else ""


def _ratio_target(out, ctx, summary, name, issue, wl, variant, server, versus, metric, op, want):
    key = {"req/s": ("rps_median", "requests_per_s"), "CPU/req": ("cpu_us_median", "server_cpu_us_per_request"),
           "instructions/req": ("instructions_per_request", "instructions_per_request"),
           "load time": ("load_ms_median", "load_ms")}[metric]
    a, b = _summary(summary, wl, variant, server), _summary(summary, wl, variant, versus)
    row = {"target": name, "issue": issue, "workload": wl, "variant": variant, "server": server, "versus": versus,
           "metric": metric + " ratio", "want": "%s %s" % (op, want), "value": "", "paired": ""}
    va, vb = (num(a[key[0]]) if a else None), (num(b[key[0]]) if b else None)
    if va is None or not vb:
        row["verdict"] = "not run"
    else:
        row["value"] = round(va / vb, 3)
        row["paired"] = _paired(ctx.rows, wl, variant, server, versus, key[1])
        row["verdict"] = _verdict(ctx, row["value"], op, want)
    out.append(row)


def _idle_rss(ctx, issue, mb):
    """10,000 idle keep-alive connections on spindle-c in ≤ MB (RSS of the whole tree, with them)."""
    o = ctx.opts
    mem = next((r for r in ctx.rows if r["workload"] == "memory" and r["server"] == "spindle-c"), None)
    row = {"target": "10,000 idle keep-alive connections in ≤ %s MB (RSS, whole tree)" % mb, "issue": issue,
           "workload": "memory", "variant": mem["variant"] if mem else "", "server": "spindle-c", "versus": "",
           "metric": "RSS MB with the connections", "want": "≤ %s" % mb, "value": "", "paired": ""}
    if not mem or num(mem.get("rss_kb_after")) is None:
        row["verdict"] = "not run"
    else:
        row["value"] = round(num(mem["rss_kb_after"]) / 1024, 1)
        if int(mem.get("connections") or 0) != 10000 and not o.smoke:
            row["verdict"] = "not judged (%s connections, not 10,000)" % mem.get("connections")
        elif int(mem.get("held_open") or 0) != int(mem.get("connections") or 0) and not o.smoke:
            row["verdict"] = "NOT met (%s of %s held open)" % (mem.get("held_open"), mem.get("connections"))
        else:
            row["verdict"] = _verdict(ctx, row["value"], "≤", mb)
            pss = num(mem.get("pss_kb_after"))
            if row["verdict"].startswith("NOT") and pss is not None:
                # RSS summed over the tree counts the pages the master and the
                # worker share (libc, libcrypto) twice; PSS splits them.
                row["verdict"] += " (PSS of the tree %.1f MB)" % (pss / 1024)
    return row


def _figure_target(out, ctx, summary, name, issue, wl, variant, server, key, metric, op, want, versus=()):
    """A figure of one server's summary (not a ratio) against WANT, and,
    for each server of VERSUS in the run, below that server's figure too."""
    a = _summary(summary, wl, variant, server)
    row = {"target": name, "issue": issue, "workload": wl, "variant": variant, "server": server,
           "versus": " ".join(versus), "metric": metric, "want": "%s %s" % (op, want), "value": "", "paired": ""}
    v = num(a.get(key)) if a else None
    if v is None:
        row["verdict"] = "not run"
        out.append(row)
        return
    row["value"] = round(v) if v >= 100 else round(v, 1)
    row["verdict"] = _verdict(ctx, v, op, want)
    for peer in versus:
        b = _summary(summary, wl, variant, peer)
        vb = num(b.get(key)) if b else None
        if vb is None:
            row["verdict"] += "; %s not run" % peer
        elif row["verdict"] == "met" and not v < vb:
            row["verdict"] = "NOT met (%s has %s)" % (peer, round(vb))
    out.append(row)


def _round3(out, ctx, summary):
    """Issue 34: ahead of granian, Python's memory per parked or idle
    WebSocket, TLS and the default backend below nginx, the parser, idle
    keep-alive memory (its ASGI hello CPU/req ≤ 0.4× uvicorn is issue 17's
    row, and keep-alive CPU/req ≤ 0.8× nginx on the default is issue 23's)."""
    o = ctx.opts
    c = "c=%d" % o.connections[0]
    for name, wl, variant, metric, op, want in (
            ("ASGI hello req/s ≥ 1.5× granian", "asgi", "hello " + c, "req/s", "≥", 1.5),
            ("ASGI hello CPU/req ≤ 0.6× granian", "asgi", "hello " + c, "CPU/req", "≤", 0.6),
            ("FastAPI JSON req/s ≥ 1.3× granian", "asgi", "fastapi " + c, "req/s", "≥", 1.3),
            ("WSGI hello req/s ≥ 1.5× granian", "wsgi", "hello", "req/s", "≥", 1.5),
            ("WSGI hello CPU/req ≤ 0.6× granian", "wsgi", "hello", "CPU/req", "≤", 0.6)):
        _ratio_target(out, ctx, summary, name, 34, wl, variant, "spindle", "granian", metric, op, want)
    parked = next((r["variant"] for r in ctx.rows if r["workload"] == "parked" and r["server"] == "spindle"), "")
    _figure_target(out, ctx, summary, "a parked WSGI spindle.websocket ≤ 12 KB (worker RSS)", 34, "parked", parked,
                   "spindle", "bytes_per_connection", "bytes/WebSocket", "≤", 12000)
    _figure_target(out, ctx, summary, "an idle ASGI WebSocket ≤ 12 KB, below uvicorn's and granian's", 34, "asgi",
                   "%d idle WebSockets" % getattr(o, "asgi_idle_websockets", 1000), "spindle", "bytes_per_connection",
                   "bytes/WebSocket", "≤", 12000, versus=("uvicorn", "granian"))
    from .tlsbench import variants
    _ratio_target(out, ctx, summary, "TLS keep-alive CPU/req ≤ 0.8× nginx", 34, "tls",
                  variants(o.connections[0])["keepalive"], "spindle-c", "nginx", "CPU/req", "≤", 0.8)
    for conns in o.connections:
        for variant in ("c=%d" % conns, "wrk c=%d" % conns):
            _ratio_target(out, ctx, summary, "no keep-alive%s %s CPU/req ≤ 0.85× nginx, default backend" % (
                " (wrk, Connection: close)" if variant.startswith("wrk") else " (ab)", "c=%d" % conns),
                34, "close", variant, "spindle-c", "nginx", "CPU/req", "≤", 0.85)
    _figure_target(out, ctx, summary, "the 15-field request's parse < 1,000 instructions", 34, "instructions",
                   "parse: 15-field request", "spindle-c", "instructions_per_request", "instructions", "≤", 999)
    out.append(_idle_rss(ctx, 34, 6))


def _verdict(ctx, value, op, want):
    if ctx.opts.smoke:
        return "not judged"
    ok = value >= want if op == "≥" else value <= want
    return "met" if ok else "NOT met"


def judge(ctx, summary):
    o = ctx.opts
    out = []
    c = "c=%d" % o.connections[0]
    # Issue 6: the C server against nginx, 1 worker each (bench/vs-nginx.sh,
    # instructions.sh, idle.sh).
    for wl in ("keepalive", "close"):
        _ratio_target(out, ctx, summary, "%s req/s ≥ 0.95× nginx" % wl, 6, wl, c, "spindle-c", "nginx",
                      "req/s", "≥", 0.95)
        _ratio_target(out, ctx, summary, "%s CPU/req ≤ 1.0× nginx" % wl, 6, wl, c, "spindle-c", "nginx",
                      "CPU/req", "≤", 1.0)
    _ratio_target(out, ctx, summary, "instructions/request ≤ 0.5× nginx", 6, "instructions", "keep-alive",
                  "spindle-c", "nginx", "instructions/req", "≤", 0.5)
    out.append(_idle_rss(ctx, 6, 40))
    # Issue 7: static files (bench/static.sh).
    for v in ("1KiB", "1MiB"):
        _ratio_target(out, ctx, summary, "static %s req/s ≥ 1.0× nginx" % v, 7, "static", v, "spindle-c", "nginx",
                      "req/s", "≥", 1.0)
    # Issue 8: the WSGI binding's hello world (bench/wsgi.sh).
    for wl in ("keepalive", "close"):
        for peer, want in (("nginx", 0.9), ("uwsgi", 4), ("gunicorn-sync", 10)):
            _ratio_target(out, ctx, summary, "WSGI %s req/s ≥ %s× %s" % (wl, want, peer), 8, wl, c, "spindle", peer,
                          "req/s", "≥", want)
        _ratio_target(out, ctx, summary, "WSGI %s CPU/req ≤ 2× spindle-c" % wl, 8, wl, c, "spindle", "spindle-c",
                      "CPU/req", "≤", 2)
    # Issue 9: sessions (bench/sessions.sh).
    out.append(_sessions(ctx, summary))
    _tls(out, ctx, summary)
    _round2(out, ctx, summary)
    # Issue 17: ASGI against uvicorn (httptools, uvloop), the asgi workload.
    asgi = [("ASGI hello req/s ≥ 2.5× uvicorn", "hello " + c, "req/s", "≥", 2.5),
            ("ASGI hello CPU/req ≤ 0.4× uvicorn", "hello " + c, "CPU/req", "≤", 0.4),
            ("FastAPI JSON req/s ≥ 1.8× uvicorn", "fastapi " + c, "req/s", "≥", 1.8),
            ("WebSocket echo round trips/s ≥ 2× uvicorn", "ws echo, %d clients" % getattr(o, "asgi_ws_clients", 100),
             "req/s", "≥", 2)]
    for name, variant, metric, op, want in asgi:
        _ratio_target(out, ctx, summary, name, 17, "asgi", variant, "spindle",
                      "uvicorn", metric, op, want)
    # Issue 21: HTTP/2, h2load -c100 -m10 hello world, over h2c and TLS (the h2 workload).
    for v in ("h2c", "h2 TLS"):
        variant = "%s c=100 m=10" % v
        _ratio_target(out, ctx, summary, "%s req/s ≥ 1.0× nginx" % v, 21, "h2", variant, "spindle-c", "nginx",
                      "req/s", "≥", 1.0)
        _ratio_target(out, ctx, summary, "%s CPU/req ≤ 0.9× nginx" % v, 21, "h2", variant, "spindle-c", "nginx",
                      "CPU/req", "≤", 0.9)
    _round3(out, ctx, summary)
    # Issue 34, item 5: a browser's page over HTTP/1.1 (the page workload).
    from .page import VARIANT
    _ratio_target(out, ctx, summary, "page load ≤ 1.0× nginx", 34, "page", VARIANT, "spindle-c", "nginx",
                  "load time", "≤", 1.0)
    return out


def _round2(out, ctx, summary):
    """Issue 23: below nginx's CPU per request (either loop backend), 1 MiB
    files at no more CPU, the WSGI hello world under 8,000 instructions."""
    # spindle-c is the default backend (auto); the epoll rows only when run.
    for srv in ("spindle-c", "spindle-c-uring") + (("spindle-c-epoll",) if "spindle-c-epoll" in getattr(ctx.opts, "servers", ())
                                                    else ()):
        for c in ctx.opts.connections:
            for wl, variant, want in (("keepalive", "c=%d" % c, 0.8), ("close", "c=%d" % c, 0.9),
                                      ("close", "wrk c=%d" % c, 0.9)):
                how = {"keepalive": "keep-alive", "close": "no keep-alive"}[wl]
                tool = " (wrk, Connection: close)" if variant.startswith("wrk") else (
                    " (ab)" if wl == "close" else "")
                _ratio_target(out, ctx, summary, "%s%s %s CPU/req ≤ %s× nginx, %s" % (how, tool, variant.split()[-1],
                                                                                    want, srv),
                              "23, 34" if (wl, srv) == ("keepalive", "spindle-c") else 23, wl, variant, srv,
                              "nginx", "CPU/req", "≤", want)
    _ratio_target(out, ctx, summary, "static 1MiB CPU/req ≤ 1.0× nginx", 23, "static", "1MiB", "spindle-c", "nginx",
                  "CPU/req", "≤", 1.0)
    ins = _summary(summary, "instructions", "keep-alive", "spindle")
    row = {"target": "WSGI hello world < 8,000 instructions/request", "issue": 23, "workload": "instructions",
           "variant": "keep-alive", "server": "spindle", "versus": "", "metric": "instructions/req",
           "want": "< 8000", "value": "", "paired": ""}
    v = num(ins["instructions_per_request"]) if ins else None
    if v is None:
        row["verdict"] = "not run"
    else:
        row["value"] = round(v)
        row["verdict"] = _verdict(ctx, v, "≤", 7999)
    out.append(row)


def _tls(out, ctx, summary):
    """Issue 20: the tls workload, spindle-c against nginx (same certificate,
    curve and suite)."""
    from .tlsbench import variants
    v = variants(ctx.opts.connections[0])
    for name, key, metric, op, want in (
            ("TLS keep-alive req/s ≥ 1.0× nginx", "keepalive", "req/s", "≥", 1.0),
            ("TLS keep-alive CPU/req ≤ 0.9× nginx", "keepalive", "CPU/req", "≤", 0.9),
            ("TLS full handshake conn/s ≥ 1.0× nginx", "full", "req/s", "≥", 1.0),
            ("TLS full handshake CPU/conn ≤ 1.0× nginx", "full", "CPU/req", "≤", 1.0)):
        _ratio_target(out, ctx, summary, name, 20, "tls", v[key], "spindle-c", "nginx", metric, op, want)
    idle = {r["server"]: r for r in ctx.rows if r["workload"] == "tls" and r["variant"].endswith(" idle")}
    a, b = idle.get("spindle-c"), idle.get("nginx")
    row = {"target": "10,000 idle TLS connections: RSS/conn ≤ 1.0× nginx", "issue": 20, "workload": "tls",
           "variant": a["variant"] if a else "", "server": "spindle-c", "versus": "nginx",
           "metric": "bytes/conn (RSS) ratio", "want": "≤ 1.0", "value": "", "paired": ""}
    va, vb = (num(a.get("bytes_per_connection")) if a else None), (num(b.get("bytes_per_connection")) if b else None)
    if va is None or not vb:
        row["verdict"] = "not run"
    else:
        row["value"] = round(va / vb, 3)
        if any(int(r.get("held_open") or 0) != int(r.get("connections") or 0) for r in (a, b)) and not ctx.opts.smoke:
            row["verdict"] = "NOT met (not every connection held open)"
        elif int(a.get("connections") or 0) != 10000 and not ctx.opts.smoke:
            row["verdict"] = "not judged (%s connections, not 10,000)" % a.get("connections")
        else:
            row["verdict"] = _verdict(ctx, row["value"], "≤", 1.0)
    out.append(row)


def _sessions(ctx, summary):
    """Two variants of one server (the session demo), not two servers."""
    a = _summary(summary, "sessions", "sqlite store", "spindle-c")
    b = _summary(summary, "sessions", "hello", "spindle-c")
    row = {"target": "new session per request, SQLite store, ≥ 0.30× hello world", "issue": 9,
           "workload": "sessions", "variant": "sqlite store", "server": "spindle-c",
           "versus": "hello (same program, GET /hello)", "metric": "req/s ratio", "want": "≥ 0.3", "paired": ""}
    va, vb = (num(a["rps_median"]) if a else None), (num(b["rps_median"]) if b else None)
    if va is None or not vb:
        row.update(value="", verdict="not run")
        return row
    row["value"] = round(va / vb, 3)
    by = {}
    for r in ctx.rows:
        if r["workload"] == "sessions" and r["server"] == "spindle-c":
            by.setdefault(r["round"], {})[r["variant"]] = num(r.get("requests_per_s"))
    ratios = [d["sqlite store"] / d["hello"] for d in by.values() if d.get("sqlite store") and d.get("hello")]
    row["paired"] = round(statistics.median(ratios), 3) if ratios else ""
    row["verdict"] = _verdict(ctx, row["value"], "≥", 0.30)
    return row


def table(rows):
    lines = ["| issue | target | figure | paired per round | verdict |", "|---:|---|---:|---:|---|"]
    for r in rows:
        unit = " MB" if "MB" in r["metric"] else ("×" if "ratio" in r["metric"] else (
            " B" if r["metric"].startswith("bytes/") else ""))
        fig = "–" if r["value"] == "" else ("%s" % r["value"]) + unit
        paired = "–" if r["paired"] == "" else "%s×" % r["paired"]
        verdict = "**NOT met**" if r["verdict"].startswith("NOT") else r["verdict"]
        lines.append("| %s | %s | %s | %s | %s |" % (r["issue"], r["target"], fig, paired, verdict))
    return lines
