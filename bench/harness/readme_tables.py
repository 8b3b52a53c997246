"""docs/performance.md's benchmark tables, drawn from bench/latest alone (runs.csv,
summary.csv and provenance.csv, which names the run each workload's rows
come from). Each table sits between <!-- bench:NAME --> and
<!-- /bench:NAME --> and says which run it shows; a table whose workloads
are not in bench/latest is left as it is. Pure: text in, text out."""
import csv
import os
import re

from .report import fmt, num, ratio

NAMES = {"spindle-c": "spindle C", "spindle-c-uring": "spindle C (io_uring)",
         "spindle-c-epoll": "spindle C (epoll)", "spindle": "spindle WSGI",
         "gunicorn-sync": "gunicorn sync", "uwsgi": "uWSGI"}
ORDER = ["spindle-c", "spindle-c-uring", "spindle-c-epoll", "spindle", "nginx", "node", "gevent", "eventlet", "gunicorn-gevent", "gunicorn-sync", "uwsgi",
         "tornado"]
WSGI_ORDER = ["spindle", "granian", "uwsgi", "gunicorn-sync", "gunicorn-gevent", "gevent", "eventlet"]
ASGI_ORDER = ["spindle", "granian", "uvicorn", "uvicorn-h11", "hypercorn", "daphne"]
ASGI_NAMES = {"spindle": "spindle", "uvicorn": "uvicorn (httptools, uvloop)", "uvicorn-h11": "uvicorn (h11)"}
WSGI_APPS = [("hello", "hello"), ("ip", 'web.py "your IP"'), ("mako", "Mako template"),
             ("sqlite", "SQLAlchemy, SQLite"), ("pg", "SQLAlchemy, PostgreSQL"), ("mako-pg", "Mako + PostgreSQL"),
             ("flask", "Flask")]
PROVENANCE = ["workload", "date", "command", "spindle", "machine", "took", "report"]
BLOCK = re.compile(r"(<!-- bench:([a-z0-9-]+) -->\n)(.*?)(<!-- /bench:\2 -->)", re.S)


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def load(latest):
    """(runs, summary, provenance by workload) of a bench/latest directory."""
    prov = {p["workload"]: p for p in read_csv(os.path.join(latest, "provenance.csv"))}
    return read_csv(os.path.join(latest, "runs.csv")), read_csv(os.path.join(latest, "summary.csv")), prov


def _conns(n):
    try:
        return "{:,}".format(int(n))
    except (TypeError, ValueError):
        return str(n or "?")


def _find(summary, wl, variant, server):
    return next((s for s in summary if s["workload"] == wl and s["variant"] == variant and s["server"] == server),
                None)


def _variants(summary, wl):
    out = []
    for s in summary:
        if s["workload"] == wl and s["variant"] not in out:
            out.append(s["variant"])
    return out


def _bytes(b):
    b = num(b)
    return "–" if b is None else ("%d B" % b if b < 1000 else "%.1f KB" % (b / 1000))


def _syscalls(runs, wl, server):
    """(total per request, [(call, per request)]) of the syscalls run."""
    r = next((r for r in runs if r["workload"] == "syscalls" and r["variant"] == wl and r["server"] == server), None)
    if not r or num(r.get("syscalls_per_request")) is None:
        return None, []
    calls = [kv.split("=") for kv in (r.get("syscalls") or "").split()]
    return num(r["syscalls_per_request"]), [(k, num(v)) for k, v in calls]


def source_line(prov, workloads):
    """Which run the table's figures come from: one run, or each run with
    the workloads it gave."""
    by_run = {}
    for w in workloads:
        p = prov.get(w)
        if p:
            by_run.setdefault((p["date"], p["command"], p["spindle"]), []).append(w)
    if not by_run:
        return "_Not measured in `bench/latest`._"
    parts = []
    for (date, cmd, rev), ws in sorted(by_run.items()):
        what = "" if len(by_run) == 1 else " (%s)" % ", ".join(ws)
        parts.append("%s, `%s`, spindle %s%s" % (date, cmd, rev, what))
    return "_From `bench/latest`: the run of %s._" % "; and the run of ".join(parts)


def hello_table(runs, summary, prov):
    servers = [s for s in ORDER if any(x["server"] == s and x["workload"] in ("keepalive", "close", "memory")
                                       for x in summary)]
    if not servers:
        return None
    rows = []
    ka = _variants(summary, "keepalive")
    cl = [v for v in _variants(summary, "close") if not v.startswith("wrk")]  # the ab runs

    def row(title, cell):
        rows.append("| %s | %s |" % (title, " | ".join(cell(s) for s in servers)))

    def rps(wl, v):
        return lambda s: fmt((_find(summary, wl, v, s) or {}).get("rps_median"))

    def cpu(wl, v):
        return lambda s: fmt((_find(summary, wl, v, s) or {}).get("cpu_us_median"), 1)

    if ka:
        c = ka[0].split("=")[-1]
        row("keep-alive, %s conns: requests/s" % _conns(c), rps("keepalive", ka[0]))
        row("keep-alive, %s conns: server CPU µs/request" % _conns(c), cpu("keepalive", ka[0]))
        if len(ka) > 1:
            row("keep-alive, %s conns: requests/s" % _conns(ka[-1].split("=")[-1]), rps("keepalive", ka[-1]))
    if cl:
        c = cl[-1].split("=")[-1]
        row("no keep-alive (ab -c %s): requests/s" % c, rps("close", cl[-1]))
        row("no keep-alive (ab -c %s): server CPU µs/request" % c, cpu("close", cl[-1]))
    for wl, title in (("keepalive", "keep-alive"), ("close", "no keep-alive")):
        if any(r["workload"] == "syscalls" and r["variant"] == wl for r in runs):
            row("syscalls per request, %s (strace -c)" % title,
                lambda s, wl=wl: fmt(_syscalls(runs, wl, s)[0], 2) if _syscalls(runs, wl, s)[0] is not None
                else "–")
    for v in _variants(summary, "latency"):
        row("p99 / p99.9 latency at %s, open loop (ms)" % _rate(v),
            lambda s, v=v: "%s / %s" % (fmt((_find(summary, "latency", v, s) or {}).get("p99_ms"), 2),
                                        fmt((_find(summary, "latency", v, s) or {}).get("p999_ms"), 2))
            if _find(summary, "latency", v, s) else "–")
    for v in _variants(summary, "memory"):
        def mem(s, v=v):
            m = _find(summary, "memory", v, s)
            if not m:
                return "–"
            if not num(m.get("held_open")) and "closed" in (m.get("notes") or ""):
                return "closes"
            return _bytes(m.get("bytes_per_connection"))
        row("memory per idle connection (%s held)" % _conns(v.split()[0]), mem)
    if any(s["workload"] == "instructions" for s in summary):
        def ins(s):
            m = _find(summary, "instructions", "keep-alive", s)
            if m:
                return fmt(m.get("instructions_per_request"))
            return "not measured (JIT)" if s == "node" else "–"
        row("user-space instructions per request", ins)
    head = "| hello world, 1 worker | %s |" % " | ".join(NAMES.get(s, s) for s in servers)
    sep = "|---|" + "---:|" * len(servers)
    wls = ["keepalive", "close", "syscalls", "latency", "memory", "instructions"]
    return [source_line(prov, [w for w in wls if w in prov]), "", head, sep] + rows


def _rate(v):
    n = v.split()[0]
    return "%s req/s" % _conns(n) if n.isdigit() else v


def _ratio_cells(summary, wl, variant, refs, key="rps_median"):
    """spindle's KEY over each reference server's, or – when one is missing."""
    a = _find(summary, wl, variant, "spindle")
    out = []
    for ref in refs:
        b = _find(summary, wl, variant, ref)
        out.append(ratio(a.get(key), b.get(key)) if a and b and num(a.get(key)) and num(b.get(key)) else "–")
    return out


def wsgi_table(runs, summary, prov):
    """The WSGI app matrix (requests/s and CPU per request), and below it the
    asgi workload's table when bench/latest has it: both in the README's
    wsgi block."""
    lines = []
    servers = [s for s in WSGI_ORDER if any(x["workload"] == "wsgi" and x["server"] == s for x in summary)]
    if servers:
        c = next((r["connections"] for r in runs if r["workload"] in ("wsgi", "keepalive") and r.get("connections")),
                 "?")
        refs = [s for s in ("granian",) if s in servers]
        lines = [source_line(prov, ["wsgi"]), "",
                 "| WSGI app (%s conns, 1 worker): requests/s (server CPU µs/request) | %s |" % (
                     _conns(c), " | ".join([NAMES.get(s, s) for s in servers] + ["spindle ÷ %s" % r for r in refs])),
                 "|---|" + "---:|" * (len(servers) + len(refs))]
        for app, title in WSGI_APPS:
            if any(_find(summary, "wsgi", app, s) for s in servers):
                cells = []
                for s in servers:
                    m = _find(summary, "wsgi", app, s) or {}
                    cells.append("%s (%s)" % (fmt(m.get("rps_median")), fmt(m.get("cpu_us_median"), 1)) if m else "–")
                lines.append("| %s | %s |" % (title, " | ".join(cells + _ratio_cells(summary, "wsgi", app, refs))))
    asgi = asgi_table(runs, summary, prov)
    if asgi:
        lines += ([""] if lines else []) + asgi
    return lines or None


def asgi_table(runs, summary, prov):
    servers = [s for s in ASGI_ORDER if any(x["workload"] == "asgi" and x["server"] == s for x in summary)]
    if not servers:
        return None
    refs = [s for s in ("granian", "uvicorn") if s in servers]
    lines = [source_line(prov, ["asgi"]), "",
             "| ASGI, 1 worker | %s |" % " | ".join([ASGI_NAMES.get(s, s) for s in servers] +
                                                    ["spindle ÷ %s" % r for r in refs]),
             "|---|" + "---:|" * (len(servers) + len(refs))]

    def row(title, variant, key, digits=0):
        if not any(_find(summary, "asgi", variant, s) for s in servers):
            return
        cells = [fmt((_find(summary, "asgi", variant, s) or {}).get(key), digits) for s in servers]
        lines.append("| %s | %s |" % (title, " | ".join(cells + _ratio_cells(summary, "asgi", variant, refs, key))))

    for v in _variants(summary, "asgi"):
        if "idle" in v or v == "instructions":
            continue
        if v.startswith("ws echo"):
            title = "WebSocket echo (%s)" % v.split(", ", 1)[-1]
            row("%s: round trips/s" % title, v, "rps_median")
            row("%s: server CPU µs/round trip" % title, v, "cpu_us_median", 1)
        else:
            what, c = v.rsplit(" c=", 1) if " c=" in v else (v, "?")
            title = {"hello": "raw ASGI hello", "fastapi": "FastAPI JSON"}.get(what, what)
            row("%s, %s conns: requests/s" % (title, _conns(c)), v, "rps_median")
            row("%s, %s conns: server CPU µs/request" % (title, _conns(c)), v, "cpu_us_median", 1)
    mem = [r for r in runs if r["workload"] == "asgi" and "idle" in r["variant"]]
    if mem:
        by = {r["server"]: r for r in mem}
        n = mem[0]["variant"].split()[0]
        cells = [_bytes(by[s].get("bytes_per_connection")) if s in by else "–" for s in servers]
        rat = [ratio(by["spindle"].get("bytes_per_connection"), by[r].get("bytes_per_connection"))
               if "spindle" in by and r in by else "–" for r in refs]
        lines.append("| memory per idle WebSocket (%s held, RSS) | %s |" % (_conns(n), " | ".join(cells + rat)))
    ir = {r["server"]: r for r in runs if r["workload"] == "asgi" and r["variant"] == "instructions"}
    if ir:
        cells = [fmt(ir[s].get("instructions_per_request")) if s in ir else "–" for s in servers]
        rat = [ratio(ir["spindle"].get("instructions_per_request"), ir[r].get("instructions_per_request"))
               if "spindle" in ir and r in ir else "–" for r in refs]
        lines.append("| user-space instructions per request (raw hello, callgrind) | %s |" % " | ".join(cells + rat))
    return lines


def nginx_table(runs, summary, prov):
    """spindle's C server against nginx, with the ratio, workload by workload."""
    out = []

    def pair(title, wl, variant, key, digits=0, unit=""):
        a, b = _find(summary, wl, variant, "spindle-c"), _find(summary, wl, variant, "nginx")
        if a and b and num(a.get(key)) is not None and num(b.get(key)) is not None:
            out.append("| %s | %s%s | %s%s | %s |" % (title, fmt(a[key], digits), unit, fmt(b[key], digits), unit,
                                                    ratio(a[key], b[key])))

    used = []
    for wl, label in (("keepalive", "keep-alive"), ("close", "no keep-alive (ab)")):
        for v in _variants(summary, wl):
            n = len(out)
            c = _conns(v.split("=")[-1])
            lab = "no keep-alive (wrk, Connection: close)" if v.startswith("wrk") else label
            pair("%s, %s conns: requests/s" % (lab, c), wl, v, "rps_median")
            pair("%s, %s conns: server CPU per request" % (lab, c), wl, v, "cpu_us_median", 1, " µs")
            used += [wl] if len(out) > n else []
    for wl, label in (("keepalive", "keep-alive"), ("close", "no keep-alive")):
        a, b = _syscalls(runs, wl, "spindle-c"), _syscalls(runs, wl, "nginx")
        if a[0] is not None and b[0] is not None:
            # The calls made at least once in 20 requests.
            top = [", ".join("%s %.2f" % kv for kv in x[1] if kv[1] >= 0.05) for x in (a, b)]
            out.append("| syscalls per request, %s (strace -c) | %.2f (%s) | %.2f (%s) | %s |" % (
                label, a[0], top[0], b[0], top[1], ratio(a[0], b[0])))
            used.append("syscalls")
    n = len(out)
    pair("user-space instructions per keep-alive request", "instructions", "keep-alive", "instructions_per_request")
    used += ["instructions"] if len(out) > n else []
    for v in _variants(summary, "memory"):
        a, b = _find(summary, "memory", v, "spindle-c"), _find(summary, "memory", v, "nginx")
        if a and b:
            out.append("| memory per idle connection (%s held) | %s | %s | %s |" % (
                _conns(v.split()[0]), _bytes(a.get("bytes_per_connection")), _bytes(b.get("bytes_per_connection")),
                ratio(a.get("bytes_per_connection"), b.get("bytes_per_connection"))))
            used.append("memory")
    for v in _variants(summary, "static"):
        n = len(out)
        pair("static %s file, keep-alive: requests/s" % v.replace("KiB", " KiB").replace("MiB", " MiB"),
             "static", v, "rps_median")
        pair("static %s file, keep-alive: server CPU per request" % v.replace("KiB", " KiB").replace("MiB", " MiB"),
             "static", v, "cpu_us_median", 1, " µs")
        used += ["static"] if len(out) > n else []
    for v in _variants(summary, "page"):
        n = len(out)
        pair("a page of 101 files in headless Chromium (HTTP/1.1, cache off): load time", "page", v,
             "load_ms_median", 0, " ms")
        used += ["page"] if len(out) > n else []
    for v in _variants(summary, "tls"):
        n = len(out)
        pair("TLS 1.3, %s: requests/s" % v, "tls", v, "rps_median")
        pair("TLS 1.3, %s: server CPU per request" % v, "tls", v, "cpu_us_median", 1, " µs")
        used += ["tls"] if len(out) > n else []
    if not out:
        return None
    return [source_line(prov, sorted(set(used), key=used.index)), "",
            "| spindle's C server against nginx, 1 worker each | spindle | nginx | ratio |",
            "|---|---:|---:|---:|"] + out


def runs_line(prov):
    """Each run in bench/latest: its date, command, spindle, machine, time
    taken, and the workloads it gave."""
    by_run = {}
    for w, p in prov.items():
        by_run.setdefault(tuple(p.get(k, "") for k in PROVENANCE[1:]), []).append(w)
    if not by_run:
        return None
    lines = []
    for (date, cmd, rev, mach, took, rep), ws in sorted(by_run.items()):
        link = " Its report: [`bench/latest/%s`](../bench/latest/%s)." % (rep, rep) if rep else ""
        lines.append("- %s: `%s` (spindle %s), %s; %s. Workloads: %s.%s" % (date, cmd, rev, took, mach,
                                                                            ", ".join(sorted(ws)), link))
    return lines


TABLES = {"runs": lambda r, s, p: runs_line(p), "hello": hello_table, "wsgi": wsgi_table, "nginx": nginx_table}


def tables(runs, summary, prov):
    """NAME -> the block's text (None: nothing in bench/latest for it)."""
    out = {}
    for name, fn in TABLES.items():
        lines = fn(runs, summary, prov)
        out[name] = None if lines is None else "\n".join(lines) + "\n"
    return out


def rewrite(text, made):
    """TEXT with each <!-- bench:NAME --> block replaced by MADE[NAME];
    a block with nothing made (its workloads not in bench/latest) stays."""
    def sub(m):
        new = made.get(m.group(2))
        return m.group(0) if new is None else m.group(1) + new + m.group(4)
    return BLOCK.sub(sub, text)


def blocks(text):
    return {m.group(2): m.group(3) for m in BLOCK.finditer(text)}


def check(readme_text, latest):
    """The blocks of the README that differ from what bench/latest makes:
    [(name, in the README, made)]."""
    made = tables(*load(latest))
    have = blocks(readme_text)
    return [(n, have[n], made[n]) for n in have if made.get(n) is not None and have[n] != made[n]]
