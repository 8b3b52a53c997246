"""The stats endpoint (issue 7, "Logs and stats"): Prometheus text summed
over every worker from shared memory, counters that survive a worker's
death, and the self-refreshing HTML status page (checked in headless
Chromium when Debian's `chromium` package is installed).
"""
import os
import re
import shutil
import signal
import subprocess
import tempfile

import pytest

from lib.client import Conn

from lib.opsutil import http_get, ops_spindle, pid_alive, wait_for  # noqa: F401

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? ([0-9.eE+-]+)$')  # Prometheus names may hold digits (http2)


def scrape(srv, path="/metrics"):
    r = http_get(srv.addr, path)
    assert r.status == 200, r
    assert r.header("content-type", "").startswith("text/plain"), r.headers
    m = {}
    for ln in r.body.decode().split("\n"):
        if not ln or ln.startswith("#"):
            continue
        mm = LINE.match(ln)
        assert mm, "not Prometheus text: %r" % ln
        m[mm.group(1) + (mm.group(2) or "")] = float(mm.group(3))
    return m


def total(m):
    return sum(v for k, v in m.items() if k.startswith("spindle_requests_total{"))


def per_worker(m):
    return {int(re.search(r'pid="(\d+)"', k).group(1)): v for k, v in m.items()
            if k.startswith("spindle_worker_requests_total{")}


def test_prometheus_text_format(ops_spindle):
    srv = ops_spindle("--stats", "/metrics", workers=2)
    r = http_get(srv.addr, "/metrics")
    body = r.body.decode()
    for name, kind in (("spindle_requests_total", "counter"), ("spindle_received_bytes_total", "counter"),
                       ("spindle_sent_bytes_total", "counter"), ("spindle_open_connections", "gauge"),
                       ("spindle_workers", "gauge"), ("spindle_worker_requests_total", "counter"),
                       ("spindle_request_duration_seconds", "histogram")):
        assert "# TYPE %s %s\n" % (name, kind) in body, (name, body)
        assert "# HELP %s " % name in body, name
    m = scrape(srv)
    for c in ("1xx", "2xx", "3xx", "4xx", "5xx"):
        assert 'spindle_requests_total{class="%s"}' % c in m
    # The histogram: cumulative buckets ending in +Inf == _count.
    buckets = [(k, v) for k, v in m.items() if k.startswith("spindle_request_duration_seconds_bucket")]
    assert len(buckets) >= 5 and buckets[-1][0].endswith('{le="+Inf"}'), buckets
    vals = [v for _, v in buckets]
    assert vals == sorted(vals), buckets
    assert vals[-1] == m["spindle_request_duration_seconds_count"]
    assert r.header("cache-control") == "no-store"


def test_counters_move_with_requests(ops_spindle):
    srv = ops_spindle("--stats", "/metrics", workers=2)
    # A connection is closed after its request is counted: with no other
    # connection open (the readiness probe's is gone), m0 counts all before it.
    m0 = wait_for(lambda: (lambda m: m if m["spindle_open_connections"] == 1 else None)(scrape(srv)), 2)
    assert m0 and m0["spindle_workers"] == 2, m0
    n_ok, n_404 = 40, 7
    sent = 0
    received = 0
    for i in range(n_ok):
        with Conn(srv.addr) as c:
            req = b"GET /?i=%d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % i
            c.send(req)
            r = c.read_response()
            assert r.status == 200
            sent += len(r.body)
            received += len(req)
    for i in range(n_404):
        r = http_get(srv.addr, "/missing-%d" % i)
        assert r.status == 404
        sent += len(r.body)
    body = b"x" * 3000
    with Conn(srv.addr) as c:
        r = c.exchange("/echo", method="POST", body=body, close=True)
        assert r.status == 200 and r.body == body
    # A request is counted just after its response went out, so a scrape
    # that races the last one may miss it for a moment: poll, counting the
    # scrapes themselves (each one is a 2xx once answered).
    scrapes = [1]  # m0

    def settled():
        m = scrape(srv)
        scrapes[0] += 1
        d = m['spindle_requests_total{class="2xx"}'] - m0['spindle_requests_total{class="2xx"}']
        return m if d >= n_ok + 1 + scrapes[0] - 1 else None
    m1 = wait_for(settled, 2) or scrape(srv)
    d2 = m1['spindle_requests_total{class="2xx"}'] - m0['spindle_requests_total{class="2xx"}']
    d4 = m1['spindle_requests_total{class="4xx"}'] - m0['spindle_requests_total{class="4xx"}']
    # n_ok, the echo, and the earlier scrapes.
    assert d2 == n_ok + 1 + scrapes[0] - 1, (d2, scrapes, m0, m1)
    assert d4 == n_404, (d4, m1)
    assert m1['spindle_requests_total{class="5xx"}'] == m0['spindle_requests_total{class="5xx"}']
    din = m1["spindle_received_bytes_total"] - m0["spindle_received_bytes_total"]
    dout = m1["spindle_sent_bytes_total"] - m0["spindle_sent_bytes_total"]
    assert din >= received + len(body), (din, received)
    assert dout >= sent + len(body), (dout, sent)
    assert dout < sent + len(body) + 20000, "sent bytes far beyond the bodies: %d" % dout
    assert m1["spindle_request_duration_seconds_count"] - m0["spindle_request_duration_seconds_count"] \
        == d2 + d4
    assert m1["spindle_workers"] == 2


def test_per_worker_counts_sum_to_the_total(ops_spindle):
    srv = ops_spindle("--stats", "/metrics", workers=2)
    # Enough concurrent connections that both workers serve some.
    conns = [Conn(srv.addr) for _ in range(8)]
    try:
        for _ in range(10):
            for c in conns:
                assert c.exchange("/").status == 200
    finally:
        for c in conns:
            c.close()
    # Once the last request's accounting is done (a moment after its response).
    m = wait_for(lambda: (lambda m: m if sum(per_worker(m).values()) == total(m) else None)(scrape(srv)), 1) \
        or scrape(srv)
    pw = per_worker(m)
    assert set(pw) == srv.workers_now(), (pw, srv.workers_now())
    assert m["spindle_workers"] == len(pw) == 2
    assert sum(pw.values()) == total(m), (pw, total(m))
    assert total(m) >= 80


def test_open_connections_gauge(ops_spindle):
    srv = ops_spindle("--stats", "/metrics", "--keepalive-timeout", "5", workers=2)
    # Settled: only the scrape's own connection (the readiness probe's is gone).
    assert wait_for(lambda: scrape(srv)["spindle_open_connections"] == 1, 2), scrape(srv)
    base = 1
    conns = [Conn(srv.addr) for _ in range(5)]
    try:
        for c in conns:
            assert c.exchange("/").status == 200
        # The scrape's own connection is open too.
        assert wait_for(lambda: scrape(srv)["spindle_open_connections"] >= base + 5, 2), scrape(srv)
    finally:
        for c in conns:
            c.close()
    assert wait_for(lambda: scrape(srv)["spindle_open_connections"] <= base, 3), scrape(srv)


def test_counts_survive_a_worker_death(ops_spindle):
    srv = ops_spindle("--stats", "/metrics", workers=2, allow_worker_deaths=True)
    conns = [Conn(srv.addr) for _ in range(6)]
    for _ in range(10):
        for c in conns:
            assert c.exchange("/").status == 200
    for c in conns:
        c.close()
    m0 = scrape(srv)
    pw = per_worker(m0)
    victim = max(pw, key=pw.get)
    assert pw[victim] > 0
    os.kill(victim, signal.SIGKILL)
    assert wait_for(lambda: not pid_alive(victim), 3)
    assert wait_for(lambda: len(srv.workers_now()) == 2, 5), srv.stderr()
    m1 = scrape(srv)
    assert victim not in per_worker(m1)
    for c in ("2xx", "4xx"):
        k = 'spindle_requests_total{class="%s"}' % c
        assert m1[k] >= m0[k], (c, m0[k], m1[k])
    assert total(m1) >= total(m0), (total(m0), total(m1))
    assert m1["spindle_sent_bytes_total"] >= m0["spindle_sent_bytes_total"]
    assert m1["spindle_received_bytes_total"] >= m0["spindle_received_bytes_total"]
    assert m1["spindle_request_duration_seconds_count"] >= m0["spindle_request_duration_seconds_count"]
    assert m1["spindle_workers"] == 2


def test_counts_survive_a_reload(ops_spindle):
    srv = ops_spindle("--stats", "/metrics", workers=2)
    for _ in range(30):
        assert http_get(srv.addr, "/").status == 200
    m0 = scrape(srv)
    old = srv.workers_now()
    srv.signal(signal.SIGHUP)
    assert wait_for(lambda: not (srv.workers_now() & old) and len(srv.workers_now()) == 2, 6), srv.stderr()
    m1 = scrape(srv)
    assert total(m1) >= total(m0), (total(m0), total(m1))
    # A new worker's slot is filled once it runs, a moment after the fork
    # the process list already shows (seen on a loaded machine).
    assert wait_for(lambda: scrape(srv)["spindle_workers"] == 2, 3), scrape(srv)["spindle_workers"]


def test_html_status_page(ops_spindle):
    srv = ops_spindle("--stats", "/metrics", workers=1)
    r = http_get(srv.addr, "/metrics?html")
    assert r.status == 200
    assert r.header("content-type").startswith("text/html"), r.headers
    page = r.body.decode()
    assert "<table" in page and "<script>" in page
    assert "fetch(" in page and "setInterval(" in page and "2000" in page
    # Self-contained: nothing from a CDN.
    assert "http://" not in page and "https://" not in page and "src=" not in page
    # The counters stay at the path itself.
    assert http_get(srv.addr, "/metrics").body.startswith(b"# HELP")
    # Not served where --stats is not.
    assert http_get(srv.addr, "/nometrics?html").status == 404


def test_stats_off_by_default(ops_spindle):
    srv = ops_spindle(workers=1)
    assert http_get(srv.addr, "/metrics").status == 404
    assert http_get(srv.addr, "/stats").status == 404


def _chromium(args, tmp, timeout=60):
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
         "--user-data-dir=%s" % tmp] + args,
        capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium package is not installed")
def test_status_page_renders_in_headless_chromium(ops_spindle, tmp_path):
    srv = ops_spindle("--stats", "/status", workers=2)
    for _ in range(25):
        assert http_get(srv.addr, "/").status == 200
    for _ in range(3):
        assert http_get(srv.addr, "/missing").status == 404
    url = "http://127.0.0.1:%d/status?html" % srv.port
    profile = tempfile.mkdtemp(prefix="spn-chromium-", dir=str(tmp_path))
    png = tmp_path / "status.png"
    r = _chromium(["--screenshot=%s" % png, "--window-size=800,600", "--virtual-time-budget=4000", url],
                  profile)
    assert png.exists(), "no screenshot: rc=%s\n%s" % (r.returncode, r.stderr[-3000:])
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:16]
    assert len(data) > 5000, "screenshot too small to show the page: %d bytes" % len(data)
    w, h = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (w, h) == (800, 600), (w, h)

    r = _chromium(["--dump-dom", "--virtual-time-budget=4000", url], profile)
    dom = r.stdout
    assert "<table" in dom, "no table in the DOM:\n%s\n%s" % (dom[-3000:], r.stderr[-2000:])
    # The script ran, fetched the counters and drew the rows.
    assert "<th>requests</th>" in dom, dom[-3000:]
    m = re.search(r"<th>requests</th><td>(\d+)</td>", dom)
    assert m and int(m.group(1)) >= 28, dom[-3000:]
    m4 = re.search(r"<th>4xx</th><td>(\d+)</td>", dom)
    # The 3 misses, and the browser's own /favicon.ico lookups.
    assert m4 and 3 <= int(m4.group(1)) <= 5, dom[-3000:]
    assert re.search(r"<th>workers</th><td>2</td>", dom), dom[-3000:]
    assert '<p id="err"></p>' in dom, "the page reports an error: %s" % re.findall(r'<p id="err">.*?</p>', dom)
