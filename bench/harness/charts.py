"""PNG charts of a run's summary (matplotlib, Agg backend; Debian's
python3-matplotlib): requests/s by server with min–max whiskers, CPU per
request, latency percentiles, memory per connection, scaling, instructions.
Returns {workload: [paths]} for bench.md to embed."""
import os

from .report import num

COLORS = {"spindle-c": "#1f6fb4", "spindle": "#4ea3e6", "nginx": "#2e9e4f", "node": "#8c6d31",
          "tornado": "#d62728", "nginx+tornado": "#ff7f0e", "gunicorn-sync": "#7f7f7f",
          "gunicorn-gevent": "#9467bd", "uwsgi": "#e377c2", "gevent": "#bcbd22", "eventlet": "#17becf",
          "uvicorn": "#d62728", "uvicorn-h11": "#ff9896", "hypercorn": "#9467bd", "daphne": "#8c564b", "granian": "#ff7f0e"}


PCT = {"p50": "p50_ms", "p99": "p99_ms", "p99.9": "p999_ms"}


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _grouped(path, title, groups, series, value, lo=None, hi=None, xlabel="", log=False):
    """Horizontal grouped bars: one group per entry of GROUPS (servers), one
    bar per entry of SERIES (variants); value(group, series) -> number."""
    plt = _plt()
    import numpy as np
    h = max(2.5, 0.32 * len(groups) * max(1, len(series)) + 1.2)
    fig, ax = plt.subplots(figsize=(9, h))
    width = 0.8 / max(1, len(series))
    y = np.arange(len(groups))
    for i, s in enumerate(series):
        vals = [value(g, s) or 0 for g in groups]
        err = None
        if lo and hi:
            err = [[max(0, v - (lo(g, s) or v)) for g, v in zip(groups, vals)],
                   [max(0, (hi(g, s) or v) - v) for g, v in zip(groups, vals)]]
        bars = ax.barh(y + (i - (len(series) - 1) / 2) * width, vals, width, xerr=err, label=s,
                       capsize=2, color=None if len(series) > 1 else [COLORS.get(g, "#555") for g in groups])
        for b, v in zip(bars, vals):
            if v:
                ax.text(b.get_width(), b.get_y() + b.get_height() / 2, " {:,.0f}".format(v) if v >= 10
                        else " %.2f" % v, va="center", fontsize=7)
    ax.set_yticks(y)
    ax.set_yticklabels(groups)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    if log:
        ax.set_xscale("log")
    if len(series) > 1:
        ax.legend(fontsize=8, loc="best")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _lookup(summary, wl):
    d = {(s["server"], s["variant"]): s for s in summary if s["workload"] == wl}
    servers, variants = [], []
    for s in summary:
        if s["workload"] == wl:
            if s["server"] not in servers:
                servers.append(s["server"])
            if s["variant"] not in variants:
                variants.append(s["variant"])
    return d, servers, variants


def draw(outdir, summary, rows, machine):
    out = {}
    sub = "\n" + machine

    def field(d, k):
        return lambda g, s: num(d.get((g, s), {}).get(k))

    for wl, title in (("keepalive", "Hello world, keep-alive: requests/s"),
                      ("close", "Hello world, a connection per request (ab): requests/s"),
                      ("static", "Static files: requests/s"), ("wsgi", "WSGI apps: requests/s")):
        d, servers, variants = _lookup(summary, wl)
        if not d:
            continue
        if wl == "wsgi":  # groups = apps, bars = servers reads better here
            servers.sort(key=lambda g: -(num(d.get((g, variants[0]), {}).get("rps_median")) or 0))
            paths = [_grouped(os.path.join(outdir, "wsgi.png"), title + sub, variants, servers,
                              lambda g, s: num(d.get((s, g), {}).get("rps_median")),
                              lambda g, s: num(d.get((s, g), {}).get("rps_min")),
                              lambda g, s: num(d.get((s, g), {}).get("rps_max")), "requests/s (log)", log=True)]
        else:
            servers.sort(key=lambda g: -(num(d.get((g, variants[0]), {}).get("rps_median")) or 0))
            paths = [_grouped(os.path.join(outdir, wl + ".png"), title + sub, servers, variants,
                              field(d, "rps_median"), field(d, "rps_min"), field(d, "rps_max"), "requests/s",
                              log=(wl == "static"))]
            paths.append(_grouped(os.path.join(outdir, wl + "-cpu.png"),
                                  title.split(":")[0] + ": server CPU µs per request (lower is better)" + sub,
                                  servers, variants, field(d, "cpu_us_median"), field(d, "cpu_us_min"),
                                  field(d, "cpu_us_max"), "CPU µs/request (log)", log=True))
        out[wl] = paths
    d, servers, variants = _lookup(summary, "asgi")
    variants = [v for v in variants if any(num(d.get((g, v), {}).get("rps_median")) for g in servers)]
    if variants:  # groups = hello, FastAPI, WebSocket echo; bars = servers
        servers.sort(key=lambda g: -(num(d.get((g, variants[0]), {}).get("rps_median")) or 0))
        out["asgi"] = [_grouped(os.path.join(outdir, "asgi.png"), "ASGI: requests/s (WebSocket: round trips/s)" + sub,
                                variants, servers, lambda g, s: num(d.get((s, g), {}).get("rps_median")),
                                lambda g, s: num(d.get((s, g), {}).get("rps_min")),
                                lambda g, s: num(d.get((s, g), {}).get("rps_max")), "per second")]
    d, servers, variants = _lookup(summary, "latency")
    if d:
        v = variants[0]
        servers.sort(key=lambda g: num(d[(g, v)].get("p99_ms")) or 1e9)
        out["latency"] = [_grouped(os.path.join(outdir, "latency.png"), "Latency at %s: percentiles" % v + sub,
                                   servers, ["p50", "p99", "p99.9"],
                                   lambda g, s: num(d[(g, v)].get(PCT[s])), xlabel="ms (log)", log=True)]
    for wl, key, title, xlabel, log in (
            ("memory", "bytes_per_connection", "Memory per idle keep-alive connection (RSS of the server's processes)",
             "bytes per connection", False),
            ("instructions", "instructions_per_request", "User-space instructions per keep-alive request (callgrind)",
             "instructions/request (log)", True)):
        measured = sorted((r for r in rows if r["workload"] == wl and num(r.get(key))
                           and (wl != "instructions" or r["variant"] == "keep-alive")), key=lambda r: num(r[key]))
        if measured:
            m = {r["server"]: r for r in measured}
            out[wl] = [_grouped(os.path.join(outdir, wl + ".png"), title + sub, [r["server"] for r in measured],
                                [key], lambda g, s, m=m, key=key: num(m[g][key]), xlabel=xlabel, log=log)]
    d, servers, variants = _lookup(summary, "scaling")
    if d:
        plt = _plt()
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for g in servers:
            pts = [(int(v.split()[0]), num(d[(g, v)]["rps_median"])) for v in variants if (g, v) in d]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=g, color=COLORS.get(g))
        ax.set_xlabel("workers")
        ax.set_ylabel("requests/s")
        ax.set_xticks(sorted({int(v.split()[0]) for v in variants}))
        ax.set_title("Scaling with workers, keep-alive hello world" + sub, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
        fig.tight_layout()
        p = os.path.join(outdir, "scaling.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        out["scaling"] = [p]
    return out
