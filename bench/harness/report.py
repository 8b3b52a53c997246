"""What bench/run writes: runs.csv (every run, one row each),
summary.csv (per workload, variant and server: medians with min–max),
bench.md (a table per workload, with the machine, versions and the exact
command) and PNG charts, all in the results directory."""
import csv
import os
import statistics

from .peers import APP_DOC

COLUMNS = ["workload", "variant", "app", "server", "workers", "connections", "round", "duration_s", "requests",
           "requests_per_s", "errors", "non2xx", "server_cpu_us_per_request", "loadgen_cpu_pct",
           "loadgen_saturated", "server_cpus_other_pct", "target_rate", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms", "held_open",
           "rss_kb_before", "rss_kb_after", "pss_kb_before", "pss_kb_after", "bytes_per_connection",
           "pss_bytes_per_connection", "ir_n1", "ir_n2", "instructions_per_request", "client_errors", "mappings",
           "in_handlers", "broadcasts", "delivered_to_all", "delivery_ms_median", "delivery_ms_worst", "client_p50_ms",
           "ws_fanout_ms", "connect_s", "syscalls_per_request", "syscalls", "load_ms", "note"]
SUMMARY = ["workload", "variant", "server", "runs", "rps_median", "rps_min", "rps_max", "cpu_us_median",
           "cpu_us_min", "cpu_us_max", "errors", "non2xx", "loadgen_cpu_pct_median", "saturated_runs",
           "server_cpus_other_pct_median",
           "p50_ms", "p99_ms", "p999_ms", "max_ms", "bytes_per_connection", "pss_bytes_per_connection",
           "held_open", "instructions_per_request", "load_ms_median", "load_ms_min", "load_ms_max",
           "connections_median", "notes"]
ORDER = ["keepalive", "close", "latency", "memory", "wsgi", "static", "scaling", "instructions", "syscalls", "sessions",
         "parked", "tls", "asgi", "h2", "h2memory", "page"]
TITLES = {
    "keepalive": "Hello world, keep-alive (wrk -t1)",
    "close": "Hello world without keep-alive (ab, a connection per request)",
    "latency": "Latency at a fixed rate (keep-alive)",
    "memory": "Memory per idle keep-alive connection",
    "wsgi": "WSGI applications (wrk -t1, keep-alive where the server offers it)",
    "static": "Static files (wrk -t1, keep-alive)",
    "scaling": "Scaling with workers (wrk -t1, keep-alive)",
    "instructions": "User-space instructions per request (callgrind, ab -k -c 10)",
    "syscalls": "Syscalls per request (strace -c -f on the server's processes)",
    "sessions": "Sessions: a new session per request (examples/sessions and its WSGI twin, wrk -t1, keep-alive)",
    "h2": "HTTP/2 over cleartext (h2c, prior knowledge): h2load -t1 -c100 -m10, hello world",
    "h2memory": "Memory per idle HTTP/2 connection (h2c, one request answered on each)",
    "parked": "Parked clients: long polls and WebSockets on one chat process, a broadcast every second",
    "tls": "TLS 1.3 (ECDSA P-256, X25519, AES-128-GCM): keep-alive, handshakes, idle connections, a 1 MiB file",
    "page": "A browser's page over HTTP/1.1 (headless Chromium, cache off)",
    "asgi": "ASGI: spindle beside granian, uvicorn, hypercorn and daphne (one worker each)",
}
HOT_PATH_ROWS = 10


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def write_runs(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()})


def summarize(rows):
    groups = {}
    for r in rows:
        groups.setdefault((r["workload"], r["variant"], r["server"]), []).append(r)
    out = []
    for (wl, variant, server), rs in groups.items():
        def col(k):
            return [x for x in (num(r.get(k)) for r in rs) if x is not None]

        def med(k):
            v = col(k)
            return statistics.median(v) if v else ""

        rps, cpu, page = col("requests_per_s"), col("server_cpu_us_per_request"), col("load_ms")
        notes = sorted({r["note"] for r in rs if r.get("note")})
        out.append({
            "workload": wl, "variant": variant, "server": server, "runs": len(rs),
            "rps_median": med("requests_per_s"), "rps_min": min(rps) if rps else "",
            "rps_max": max(rps) if rps else "", "cpu_us_median": med("server_cpu_us_per_request"),
            "cpu_us_min": min(cpu) if cpu else "", "cpu_us_max": max(cpu) if cpu else "",
            "errors": int(sum(col("errors"))), "non2xx": int(sum(col("non2xx"))),
            "loadgen_cpu_pct_median": med("loadgen_cpu_pct"), "saturated_runs": int(sum(col("loadgen_saturated"))),
            "server_cpus_other_pct_median": med("server_cpus_other_pct"),
            "p50_ms": med("p50_ms"), "p99_ms": med("p99_ms"), "p999_ms": med("p999_ms"), "max_ms": med("max_ms"),
            "bytes_per_connection": med("bytes_per_connection"),
            "pss_bytes_per_connection": med("pss_bytes_per_connection"), "held_open": med("held_open"),
            "instructions_per_request": med("instructions_per_request"),
            "load_ms_median": med("load_ms"), "load_ms_min": min(page) if page else "",
            "load_ms_max": max(page) if page else "", "connections_median": med("connections") if page else "",
            "notes": "; ".join(notes),
        })
    return out


def write_summary(path, summary):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, SUMMARY)
        w.writeheader()
        for s in summary:
            w.writerow({k: (round(v, 3) if isinstance(v, float) else v) for k, v in s.items()})


def write_targets(path, rows):
    from .targets import COLUMNS as TARGET_COLUMNS
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, TARGET_COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow(r)


def fmt(v, digits=0):
    v = num(v)
    if v is None:
        return "–"
    return "{:,.{d}f}".format(v, d=digits)


def ratio(a, b):
    a, b = num(a), num(b)
    return "%.2f×" % (a / b) if a is not None and b else "–"


def reference(rows):
    names = [s["server"] for s in rows]
    return "spindle-c" if "spindle-c" in names else ("spindle" if "spindle" in names else None)


def throughput_table(summary, wl, syscalls=None):
    """SYSCALLS: {server: syscalls per request} of the syscalls workload's
    run of this WL (a column when given)."""
    sc = " syscalls/req (strace, its own run) |" if syscalls else ""
    lines = ["| variant | server | req/s median (min–max) | CPU µs/req median (min–max) | req/s ÷ ref | CPU ÷ ref "
             "| errors / non-2xx | load-gen CPU % | server CPUs busy otherwise % |" + sc + " notes |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if syscalls else "") + "---|"]
    variants = []
    for s in summary:
        if s["workload"] == wl and s["variant"] not in variants:
            variants.append(s["variant"])
    for v in variants:
        rows = [s for s in summary if s["workload"] == wl and s["variant"] == v]
        rows.sort(key=lambda s: -(num(s["rps_median"]) or 0))
        ref = reference(rows)
        refrow = next((s for s in rows if s["server"] == ref), None)
        for s in rows:
            sat = " ⚠ saturated in %d of %d runs" % (s["saturated_runs"], s["runs"]) if s["saturated_runs"] else ""
            lines.append("| %s | %s | %s (%s–%s) | %s (%s–%s) | %s | %s | %s / %s | %s%s | %s |%s %s |" % (
                v, ("**%s**" % s["server"]) if s["server"] == ref else s["server"],
                fmt(s["rps_median"]), fmt(s["rps_min"]), fmt(s["rps_max"]),
                fmt(s["cpu_us_median"], 1), fmt(s["cpu_us_min"], 1), fmt(s["cpu_us_max"], 1),
                ratio(s["rps_median"], refrow["rps_median"]) if refrow else "–",
                ratio(s["cpu_us_median"], refrow["cpu_us_median"]) if refrow else "–",
                s["errors"], s["non2xx"], fmt(s["loadgen_cpu_pct_median"]), sat,
                fmt(s.get("server_cpus_other_pct_median")),
                (" %s |" % fmt(syscalls.get(s["server"]), 2)) if syscalls else "", s["notes"]))
    return lines


def syscalls_of(rows_all, variant):
    """{server: syscalls per request} of the syscalls workload's VARIANT."""
    return {r["server"]: r["syscalls_per_request"] for r in rows_all
            if r["workload"] == "syscalls" and r["variant"] == variant and num(r.get("syscalls_per_request"))}


def latency_table(summary):
    lines = ["| server | achieved req/s | p50 ms | p99 ms | p99.9 ms | max ms | CPU µs/req | errors / non-2xx "
             "| notes |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    rows = sorted((s for s in summary if s["workload"] == "latency"), key=lambda s: num(s["p99_ms"]) or 1e9)
    for s in rows:
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s / %s | %s |" % (
            s["server"], fmt(s["rps_median"]), fmt(s["p50_ms"], 2), fmt(s["p99_ms"], 2), fmt(s["p999_ms"], 2),
            fmt(s["max_ms"], 1), fmt(s["cpu_us_median"], 1), s["errors"], s["non2xx"], s["notes"]))
    return lines


def memory_table(rows_all, wl="memory"):
    lines = ["| server | connections held open | RSS before → with them (KiB) | bytes/conn (RSS) | bytes/conn (PSS) "
             "| notes |", "|---|---:|---:|---:|---:|---|"]
    rows = sorted((r for r in rows_all if r["workload"] == wl),
                  key=lambda r: num(r.get("bytes_per_connection")) or 1e12)
    for r in rows:
        lines.append("| %s | %s of %s | %s → %s | %s | %s | %s |" % (
            r["server"], r.get("held_open", 0), r.get("connections", ""), fmt(r.get("rss_kb_before")),
            fmt(r.get("rss_kb_after")), fmt(r.get("bytes_per_connection")), fmt(r.get("pss_bytes_per_connection")),
            r.get("note", "")))
    return lines


def instructions_table(rows_all):
    lines = ["| server | what | requests between runs | Ir (short run) | Ir (long run) | instructions/request "
             "| ÷ spindle-c |", "|---|---|---:|---:|---:|---:|---:|"]
    rows = sorted((r for r in rows_all if r["workload"] == "instructions"),
                  key=lambda r: (r["variant"] != "keep-alive", num(r.get("instructions_per_request")) or 1e12))
    ref = next((r for r in rows if r["server"] == "spindle-c" and r["variant"] == "keep-alive"), None)
    for r in rows:
        # The parser's row (parse_ir.py) counts parses, not requests served:
        # no ratio to a server's whole request.
        whole = r["variant"] == "keep-alive"
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            r["server"], "hello, ab -k -c 10" if whole else r["variant"], fmt(r.get("requests")),
            fmt(r.get("ir_n1")), fmt(r.get("ir_n2")), fmt(r.get("instructions_per_request"), 1),
            ratio(r.get("instructions_per_request"), ref.get("instructions_per_request")) if ref and whole else "–"))
    return lines


def sessions_table(summary):
    lines = ["| server | variant | req/s median (min–max) | CPU µs/req median (min–max) | req/s ÷ its hello "
             "| errors / non-2xx | load-gen CPU % | notes |", "|---|---|---:|---:|---:|---:|---:|---|"]
    rows = [s for s in summary if s["workload"] == "sessions"]
    for s in rows:
        hello = next((h for h in rows if h["variant"] == "hello" and h["server"] == s["server"]), None)
        sat = " ⚠ saturated" if s["saturated_runs"] else ""
        lines.append("| %s | %s | %s (%s–%s) | %s (%s–%s) | %s | %s / %s | %s%s | %s |" % (
            s["server"], s["variant"], fmt(s["rps_median"]), fmt(s["rps_min"]), fmt(s["rps_max"]),
            fmt(s["cpu_us_median"], 1), fmt(s["cpu_us_min"], 1), fmt(s["cpu_us_max"], 1),
            ratio(s["rps_median"], hello["rps_median"]) if hello else "–", s["errors"], s["non2xx"],
            fmt(s["loadgen_cpu_pct_median"]), sat, s["notes"]))
    return lines


def syscalls_table(rows_all):
    lines = ["| server | variant | requests | syscalls/request | top calls, per request (≥ 0.005) | notes |",
             "|---|---|---:|---:|---|---|"]
    for r in rows_all:
        if r["workload"] == "syscalls":
            lines.append("| %s | %s | %s | %s | %s | %s |" % (
                r["server"], r["variant"], fmt(r.get("requests")), fmt(r.get("syscalls_per_request"), 3),
                ", ".join("%s %s" % tuple(kv.split("=")) for kv in (r.get("syscalls") or "").split()),
                r.get("note", "")))
    return lines


def parked_table(rows_all):
    lines = ["| clients | parked | client errors | RSS before → with (KiB) | PSS before → with (KiB) | in handlers "
             "| RSS B/conn | PSS B/conn | mappings | broadcasts to all | delivery to all, median (worst) ms "
             "| per-client p50 ms | ws fan-out ms |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows_all:
        if r["workload"] != "parked":
            continue
        to_all = "%s of %s" % (r.get("delivered_to_all"), r.get("broadcasts")) if r.get("broadcasts") != "" else "–"
        lines.append("| %s | %s | %s | %s → %s | %s → %s | %s | %s | %s | %s | %s | %s (%s) | %s | %s |" % (
            r["variant"], fmt(r.get("held_open")), r.get("client_errors"), fmt(r.get("rss_kb_before")),
            fmt(r.get("rss_kb_after")), fmt(r.get("pss_kb_before")), fmt(r.get("pss_kb_after")),
            fmt(r.get("in_handlers")), fmt(r.get("bytes_per_connection")), fmt(r.get("pss_bytes_per_connection")),
            fmt(r.get("mappings")), to_all, fmt(r.get("delivery_ms_median"), 1),
            fmt(r.get("delivery_ms_worst"), 1), fmt(r.get("client_p50_ms"), 1), fmt(r.get("ws_fanout_ms"), 1)))
    return lines


def page_table(summary, rows_all):
    lines = ["| server | loads | load ms median (min–max) | ÷ nginx | connections used | responses per load "
             "| errors / non-2xx | notes |", "|---|---:|---:|---:|---:|---:|---:|---|"]
    rows = [s for s in summary if s["workload"] == "page"]
    ref = next((s for s in rows if s["server"] == "nginx"), None)
    for s in sorted(rows, key=lambda s: num(s["load_ms_median"]) or 1e9):
        got = [num(r.get("requests")) for r in rows_all if r["workload"] == "page" and r["server"] == s["server"]]
        lines.append("| %s | %s | %s (%s–%s) | %s | %s | %s | %s / %s | %s |" % (
            s["server"], s["runs"], fmt(s["load_ms_median"], 1), fmt(s["load_ms_min"], 1), fmt(s["load_ms_max"], 1),
            ratio(s["load_ms_median"], ref["load_ms_median"]) if ref else "–", fmt(s["connections_median"]),
            fmt(statistics.median(got) if got else None), s["errors"], s["non2xx"], s["notes"]))
    return lines


def hot_path_table(row, top=HOT_PATH_ROWS):
    lines = ["| instructions/request | share | function |", "|---:|---:|---|"]
    for ir, share, fn in (row.get("functions") or [])[:top]:
        lines.append("| %s | %s %% | `%s` |" % (fmt(ir, 1), fmt(share, 1), fn))
    return lines


def markdown(path, ctx, summary, charts, targets=None):
    o = ctx.opts
    out = ["# spindle benchmarks — %s" % ctx.started, "",
           "Command: `%s`" % ctx.command, "",
           "Machine: %s." % ctx.machine, "",
           "Method: servers pinned to CPU %s, the load generator (one wrk thread or ab) to CPU %s; every server "
           "%d worker(s), access logs off everywhere; %d round(s) of %d s runs (latency: %d s), servers "
           "alternating run by run (order reversed every other round), a warm-up of 500 keep-alive requests "
           "(ab -k -c 10) per server; medians with "
           "min–max. CPU µs/req is utime+stime of the server's whole process tree over the run divided by the "
           "requests completed. \"Load-gen CPU %%\" is the generator's own CPU over the run: ⚠ marks runs at "
           "≥ 90 %%, where the generator, not the server, was the limit — compare CPU µs/req there. "
           "\"Server CPUs busy otherwise\" is the server CPUs' busy time not charged to the server (other "
           "processes, interrupts) over the run: high values mean the machine was not quiet. "
           "ref = spindle-c (or the WSGI binding where spindle-c does not run the app). spindle %s."
           % (",".join(map(str, ctx.server_cpus)), ",".join(map(str, ctx.lg_cpus)), o.workers, o.rounds,
              o.duration, o.latency_duration, ctx.spindle_version), ""]
    out.append("Versions: " + "; ".join("%s %s" % (k, v) for k, v in ctx.versions.items() if v) + ".")
    out.append("")
    for p in ctx.problems:
        out.append("- Note: " + p.replace("\n", " ")[:400])
    if ctx.problems:
        out.append("")
    used = [n for n in ctx.commands]
    if used:
        out += ["## Servers", "", "| server | version | what it is | command (hello world) | note |", "|---|---|---|---|---|"]
        for n in used:
            p = ctx.peer(n)
            out.append("| %s | %s | %s | `%s` | %s |" % (n, ctx.versions.get(n, ctx.spindle_version if
                                                                          n.startswith("spindle") else ""),
                                                         p.doc, ctx.commands[n], p.note))
        out += ["", "WSGI apps: " + "; ".join("**%s** %s" % (a, d) for a, d in APP_DOC.items()
                                            if a in ctx.opts.apps) + ".", ""]
    present = {r["workload"] for r in ctx.rows}
    for wl in ORDER:
        if wl not in present:
            continue
        out += ["## " + TITLES[wl], ""]
        for c in charts.get(wl, []):
            out += ["![%s](%s)" % (wl, os.path.basename(c)), ""]
        if wl == "latency":
            out += [("Load: build/bench/pace, open loop: each connection has its own schedule at rate ÷ "
                     "connections, and a request's latency counts from its scheduled time, so a server's "
                     "stall is charged to every request due during it (no coordinated omission).")
                    if ctx.pace_bin else
                    ("Load: paced wrk (build/bench/pace was not built): a closed loop, not corrected for "
                     "coordinated omission; a stalling server's tail looks better than it is."), ""]
            out += latency_table(summary)
        elif wl in ("memory", "h2memory"):
            out += memory_table(ctx.rows, wl)
        elif wl == "instructions":
            out += instructions_table(ctx.rows)
            for r in ctx.rows:
                if r["workload"] == "instructions" and r.get("functions"):
                    out += ["", "Hot path, %s: the top %d functions' self instructions per request, the two runs "
                            "subtracted per function (inlined code folded into its caller; all of them in "
                            "`instructions.%s.functions.tsv`):" % (r["server"], HOT_PATH_ROWS, r["server"]), ""]
                    out += hot_path_table(r)
        elif wl == "sessions":
            out += ["The session demo (`build/examples/sessions` for spindle-c, its WSGI twin "
                    "`bench/wsgi_apps/sessions_app.py` with `spindle.session` for spindle; one process, no "
                    "workers) with the memory store, the SQLite store (WAL) and the Redis store (a redis-server "
                    "on the load generator's CPU, where redis-server is installed); wrk sends no cookie, so "
                    "every request to `/` makes, fills and stores a new session, but in the \"returning "
                    "visitor\" rows, where every request carries one session's cookie and loads and stores "
                    "it again; `hello` is `GET /hello` on the same program.", ""]
            out += sessions_table(summary)
        elif wl == "syscalls":
            out += ["strace slows a server by an order of magnitude, so only the counts mean anything here: "
                    "the same number of requests for every server (--syscall-requests), `keepalive` with ab -k, "
                    "`close` with ab (a connection per request, so per request is per connection), in a run of "
                    "their own after the timed ones. Every process of the server is traced (master and workers).", ""]
            out += syscalls_table(ctx.rows)
        elif wl == "parked":
            out += ["examples/chat, one process (one loop), 64 KiB coroutine stacks, pinned with the servers; "
                    "the clients are bench/parked_client.py (Python, epoll, one process per kind) on the load "
                    "generator's CPU. Delivery: per broadcast (the chat's \"online\" announcement), the slowest "
                    "client's receive time minus the message's timestamp, client-side, so it includes the Python "
                    "clients' own processing; \"ws fan-out\" is the server's time to write one broadcast to every "
                    "WebSocket (worst seen). Memory is sampled while the clients are parked, keeping the sample "
                    "with the most connections in handlers. The uvicorn rows: the same API as an ASGI app "
                    "(bench/peers/uvicorn_parked.py) on uvicorn with httptools, uvloop and websockets, one process, "
                    "each broadcast sent to every WebSocket in turn and answering every parked poll. The `WSGI "
                    "spindle.websocket` row: bench/wsgi_apps/parked_py.py (python -m spindle, one worker, 10 warm-up "
                    "WebSockets first, then every handler parked in `receive`), the worker's RSS per WebSocket, no "
                    "broadcasts.", ""]
            out += parked_table(ctx.rows)
        elif wl == "tls":
            from .tlsbench import section
            out += section(ctx, summary)
        elif wl == "asgi":
            from .asgi import section
            out += ["Raw ASGI hello world (`bench/asgi_apps/hello.py`) and a FastAPI JSON endpoint "
                    "(`fastapi_json.py`): wrk -t1 keep-alive; WebSocket echo: `build/bench/ws_echo` (C, epoll, one "
                    "message out per client at a time, %d-byte text frames) on the load generator's CPU; idle "
                    "WebSockets: 10 opened and closed first (caches filled once), then opened after a handshake each and left "
                    "idle, RSS of the server's tree; instructions: "
                    "callgrind as for the instructions workload (ab -k -c 10 on the raw hello)." % 12, ""]
            out += section(ctx, summary)
        elif wl == "page":
            from .page import METHOD
            out += [METHOD, ""]
            out += page_table(summary, ctx.rows)
        elif wl in ("keepalive", "close"):
            out += throughput_table(summary, wl, syscalls_of(ctx.rows, wl))
        else:
            out += throughput_table(summary, wl)
        out.append("")
    if targets:
        from .targets import table
        out += ["## Targets", "",
                "The issues' targets, judged on this run's medians (paired: the median over rounds of the two "
                "servers' ratio in the same round)%s; also in `targets.csv`." % (
                    " — a smoke run: 1 s runs, nothing judged" if o.smoke else ""), ""]
        out += table(targets)
        out.append("")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
