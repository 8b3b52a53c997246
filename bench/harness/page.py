"""The page workload of bench/run (issue 34): a browser's page over HTTP/1.1.
Headless Chromium (tests/integration/lib/chromium.py) on the load
generator's CPU, its cache off, loads index.html and the 100 files it
names (50 PNG images, 50 scripts, 2-20 KB each) from spindle-c's --root
and from nginx (the same directory, sendfile and tcp_nopush on), servers
alternating load by load; per load the time from fetchStart to
loadEventEnd and the HTTP/1.1 connections the browser used."""
import os
import random
import struct
import sys
import time
import zlib

from . import peers, procs, workloads

IMAGES = SCRIPTS = 50
VARIANT = "%d resources (%d images, %d scripts), cache off" % (1 + IMAGES + SCRIPTS, IMAGES, SCRIPTS)
SIZES = (2 * 1024, 20 * 1024)
sys.path.insert(0, os.path.join(peers.ROOT, "tests", "integration"))  # lib.chromium


def _png(rng, size):
    """A valid PNG of about SIZE bytes: 32 pixels wide, random RGB rows
    (noise does not compress, so the file is as big as its pixels)."""
    w = 32
    h = max(1, size // (1 + 3 * w))
    raw = b"".join(b"\0" + bytes(rng.getrandbits(8) for _ in range(3 * w)) for _ in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw, 0)) + chunk(b"IEND", b""))


def _script(rng, i, size):
    """A script of SIZE bytes that counts itself in window.loaded."""
    body = "window.loaded = (window.loaded || 0) + 1;\n"
    line = "/* padding: a script of its size, as a bundle's module would be %08x */\n"
    out = ["// s%d.js\n" % i, body]
    n = len(out[0]) + len(body)
    while n < size:
        out.append(line % rng.getrandbits(32))
        n += len(out[-1])
    return "".join(out)


def make_site(root):
    """index.html, img/iN.png and js/sN.js under ROOT (the same bytes every
    run: a fixed seed). Returns the bytes of the resources."""
    rng = random.Random(34)
    os.makedirs(os.path.join(root, "img"), exist_ok=True)
    os.makedirs(os.path.join(root, "js"), exist_ok=True)
    total = 0
    for i in range(IMAGES):
        data = _png(rng, rng.randint(*SIZES))
        with open(os.path.join(root, "img", "i%d.png" % i), "wb") as f:
            f.write(data)
        total += len(data)
    for i in range(SCRIPTS):
        data = _script(rng, i, rng.randint(*SIZES)).encode()
        with open(os.path.join(root, "js", "s%d.js" % i), "wb") as f:
            f.write(data)
        total += len(data)
    # No favicon request (data: URL): every response counted is the page's.
    html = ["<!doctype html>\n<html><head><meta charset=utf-8><title>page</title>",
            '<link rel="icon" href="data:,"></head><body>\n<h1>101 resources</h1>\n']
    html += ['<img src="/img/i%d.png" width=32 alt="">\n' % i for i in range(IMAGES)]
    html += ['<script src="/js/s%d.js"></script>\n' % i for i in range(SCRIPTS)]
    html.append("</body></html>\n")
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("".join(html))
    return total


def load_once(cdp, session, url):
    """One navigation with the cache off: {load_ms, connections, requests,
    errors, non2xx, protocols}."""
    conns, protocols, seen = set(), set(), {"responses": 0, "non2xx": 0, "failed": 0}
    nav = cdp.send("Page.navigate", session, url=url)

    def on(msg):
        if msg.get("id") == nav and "error" in msg:
            raise RuntimeError("Page.navigate: %s" % msg["error"])
        if msg.get("sessionId") != session:
            return
        p = msg.get("params", {})
        if msg.get("method") == "Network.responseReceived":
            r = p.get("response", {})
            seen["responses"] += 1
            seen["non2xx"] += not 200 <= r.get("status", 0) < 300
            conns.add(r.get("connectionId"))
            protocols.add(r.get("protocol", "?"))
        elif msg.get("method") == "Network.loadingFailed":
            seen["failed"] += 1
    cdp.until_event("Page.loadEventFired", session, on)
    cdp.wait(session, "performance.getEntriesByType('navigation')[0].loadEventEnd > 0", "loadEventEnd")
    ms, loaded, resources = cdp.eval(session, "(e => [e.loadEventEnd - e.fetchStart, window.loaded || 0, "
                                     "performance.getEntriesByType('resource').length])"
                                     "(performance.getEntriesByType('navigation')[0])")
    errors = seen["failed"] + (loaded != SCRIPTS) + (resources != IMAGES + SCRIPTS)
    return {"load_ms": round(ms, 1), "connections": len(conns), "requests": seen["responses"], "errors": errors,
            "non2xx": seen["non2xx"], "note": "" if protocols <= {"http/1.1"} else "protocols " + " ".join(protocols)}


def run(ctx):
    """Both servers up on the same files, one browser, a browser context per
    server (its own connections); a first load of each not counted (it opens
    the connections; the measured loads reuse them, as a visitor's next page
    would), then --page-loads loads of each, alternating, the order
    reversed every other load."""
    from lib import chromium
    opts = ctx.opts
    if not os.access(chromium.CHROMIUM, os.X_OK):
        ctx.problem("page skipped: %s missing (Debian: chromium)" % chromium.CHROMIUM)
        return
    root = os.path.join(ctx.tmp, "page")
    make_site(root)
    ps = [p for p in ctx.peers_for("hello", opts.servers) if p.name in ("spindle-c", "nginx")]
    entries = [(p.name, workloads.make_server(ctx, p, "hello", opts.workers, ctx.server_cpus, "page", root=root),
                "hello") for p in ps]
    up = [(label, srv) for label, srv, _ in workloads.start_checked(
        ctx, entries, path="/index.html", check=lambda app, body: b"/js/s49.js" in body)]
    if not up:
        return
    deadline = time.monotonic() + 60 + 10 * opts.page_loads * len(up)
    proc, blog, cdp = chromium.start(os.path.join(ctx.tmp, "chromium"), deadline,
                                     prefix=["taskset", "-c", procs.cpu_list(ctx.lg_cpus)])
    try:
        pages = {}
        for label, srv in up:
            s = cdp.page("about:blank")
            cdp.call("Page.enable", s)
            cdp.call("Network.enable", s)
            cdp.call("Network.setCacheDisabled", s, cacheDisabled=True)
            pages[label] = s
            load_once(cdp, s, "http://127.0.0.1:%d/" % srv.port)  # opens its connections
        for i in range(opts.page_loads):
            for label, srv in (up if i % 2 == 0 else list(reversed(up))):
                res = load_once(cdp, pages[label], "http://127.0.0.1:%d/" % srv.port)
                workloads.record(ctx, {"workload": "page", "variant": VARIANT, "app": "page", "server": label,
                                       "workers": opts.workers, "round": i + 1}, res)
    except (RuntimeError, TimeoutError, OSError) as e:
        ctx.problem("page: the browser failed: %s" % e)
    finally:
        chromium.stop(proc, blog)
        procs.stop_all([s for _, s in up])


METHOD = ("Headless Chromium (Debian's, `tests/integration/lib/chromium.py`) pinned to the load generator's CPU, "
          "the servers to theirs; `index.html` names %d PNG images and %d scripts of 2–20 KB (a fixed seed: the "
          "same bytes every run), served by spindle-c (`--root`) and nginx (`root`, sendfile on, tcp_nopush on, "
          "tcp_nodelay on by default, access log off) from one directory. The cache is off "
          "(Network.setCacheDisabled); HTTP/1.1 (http://, Chromium's own 6 connections per origin); a browser "
          "context per server. A first load of each server opens its connections and is not counted; then the "
          "servers alternate load by load (the order reversed every other load). A load's time is its navigation "
          "entry's loadEventEnd − fetchStart; connections are the distinct connection ids of its responses "
          "(Network.responseReceived)." % (IMAGES, SCRIPTS))
