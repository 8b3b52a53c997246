"""TLS in operation (issue 20): a session ticket resumes on whichever of two
workers accepts; a certificate reload (HUP) under wrk load loses nothing and
new connections get the new certificate; a bad certificate on HUP keeps the
old workers serving; --stats counts full and resumed handshakes and
failures; clients stalled mid-handshake neither stall a fast one nor outlive
--tls-handshake-timeout, and each is counted as failed. The TLS core's own
behaviour is in test_tls.py."""
import os
import re
import signal
import socket
import ssl
import subprocess
import time
import warnings

import pytest

from lib.client import read_until_close
from lib.opsutil import free_port, ops_spindle, pid_alive, wait_for  # noqa: F401
from lib.tlsutil import https_get, unverified_ctx

WRK = "/usr/bin/wrk"
LUA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "harness", "wrk_report.lua")
METRIC = re.compile(r'^([a-z_]+)(\{[^}]*\})? ([0-9.eE+-]+)$', re.M)


def make_cert(d, name, cn="localhost"):
    """A self-signed ECDSA P-256 certificate for localhost: (cert, key)."""
    cert, key = os.path.join(d, name + ".pem"), os.path.join(d, name + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=" + cn,
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True,
                   timeout=30)
    return cert, key


CTX = unverified_ctx()  # one context: Python resumes a session only in the context that made it


def https(port, path="/", ctx=None, session=None, timeout=5):
    """tlsutil.https_get with the module's one context by default."""
    return https_get(port, path, ctx or CTX, session, timeout)


def der(cert_path):
    with open(cert_path) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


def metrics(port):
    status, body, *_ = https(port, "/metrics")
    assert status == 200, body
    return {m.group(1) + (m.group(2) or ""): float(m.group(3)) for m in METRIC.finditer(body.decode())}


def handshakes(m, kind):
    return m.get('spindle_tls_handshakes_total{kind="%s"}' % kind, -1)


def per_worker(m):
    return {int(re.search(r'pid="(\d+)"', k).group(1)): v for k, v in m.items()
            if k.startswith("spindle_worker_requests_total{")}


@pytest.fixture
def tls_spindle(ops_spindle, tmp_path):
    """tls_spindle(*flags, workers=2, cert=None) -> (server, cert, key): an
    https:// listener with the --stats page on /metrics, ready."""
    def start(*flags, workers=2, cert=None):
        cert, key = cert or make_cert(str(tmp_path), "cert")
        port = free_port()
        srv = ops_spindle("--bind", "https://127.0.0.1:%d" % port, "--certfile", cert, "--keyfile", key,
                          "--stats", "/metrics", *flags, workers=workers, bind=False, port=port, ready=False)

        def ready():
            return len(srv.workers_now()) >= workers and https(port, timeout=1)[0] == 200
        assert srv.wait_until(ready, 8, step=0.05, errors=(OSError, ssl.SSLError)), srv.stderr()
        return srv, cert, key
    return start


def test_a_ticket_resumes_on_either_of_two_workers(tls_spindle):
    # Each worker its own SO_REUSEPORT socket: the kernel spreads connections
    # over both by address hash. (A shared socket can give one busy worker
    # every connection, and the test would prove nothing.)
    srv, _, _ = tls_spindle("--reuse-port", workers=2)
    status, _, reused, session, _ = https(srv.port)
    assert status == 200 and not reused and session is not None and session.has_ticket
    m0 = metrics(srv.port)
    # The same ticket, from whichever worker made it, on 60 new connections.
    results = []
    for _ in range(6):
        batch = []
        for _ in range(10):
            raw = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            batch.append(CTX.wrap_socket(raw, server_hostname="localhost", session=session))
        for s in batch:
            s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        for s in batch:
            data = read_until_close(s, 5)
            results.append((s.session_reused, data.startswith(b"HTTP/1.1 200")))
            s.close()
    assert all(ok for _, ok in results), results
    assert all(r for r, _ in results), "%d of 60 handshakes resumed" % sum(r for r, _ in results)
    m1 = metrics(srv.port)
    assert handshakes(m1, "resumed") - handshakes(m0, "resumed") == 60, (m0, m1)
    # Both workers served many of them (the two scrapes add one request each
    # at most), so many resumed on the worker that did not make the ticket.
    served = {pid: n - per_worker(m0).get(pid, 0) for pid, n in per_worker(m1).items()}
    assert len(served) == 2 and all(n >= 10 for n in served.values()), served


def wrk(port, seconds, conns, *extra):
    return subprocess.Popen([WRK, "-t1", "-c%d" % conns, "-d%ds" % seconds, "--timeout", "3s", "-s", LUA, *extra,
                             "https://127.0.0.1:%d/" % port], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def wrk_result(p):
    try:
        out, _ = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    m = re.search(r"^BENCH (.*)$", out, re.M)
    assert p.returncode == 0 and m, out
    f = {k: int(float(v)) for k, v in (kv.split("=") for kv in m.group(1).split())}
    return f, out


def replace_cert(cert, key, new_cert, new_key):
    """Renames the new files over the old paths (a reader never sees half a file)."""
    os.replace(new_key, key)
    os.replace(new_cert, cert)


@pytest.mark.skipif(not os.access(WRK, os.X_OK), reason="wrk missing (Debian: wrk, in scripts/deps.sh)")
def test_certificate_reload_under_wrk_load_loses_nothing(tls_spindle, tmp_path):
    srv, cert, key = tls_spindle("--keepalive-timeout", "2", workers=2)
    old = der(cert)
    assert https(srv.port)[4] == old
    gen1 = srv.workers_now()
    new_cert, new_key = make_cert(str(tmp_path), "next", cn="localhost-next")
    new = der(new_cert)
    # Keep-alive connections and a new connection (a handshake) per request.
    loads = [wrk(srv.port, 4, 10), wrk(srv.port, 4, 4, "-H", "Connection: close")]
    try:
        time.sleep(1.5)
        replace_cert(cert, key, new_cert, new_key)
        srv.signal(signal.SIGHUP)
        gen2 = wait_for(lambda: (lambda w: w if len(w - gen1) >= 2 else None)(srv.workers_now()), 5)
        assert gen2, "no new workers 5 s after HUP:\n" + srv.stderr()
    finally:
        results = [wrk_result(p) for p in loads]
    for f, out in results:
        assert f["connect"] + f["read"] + f["write"] + f["timeout"] == 0, "wrk saw errors across the reload:\n" + out
        assert f["status"] == 0, "wrk saw non-2xx answers across the reload:\n" + out
        assert f["requests"] > 200, "too little load to prove anything:\n" + out
    # New connections get the new certificate (once the old workers stopped accepting).
    assert wait_for(lambda: https(srv.port)[4] == new, 3)
    assert all(https(srv.port)[4] == new for _ in range(10))


def test_a_bad_certificate_on_hup_keeps_the_old_workers(tls_spindle, tmp_path):
    srv, cert, key = tls_spindle(workers=2)
    old = der(cert)
    gen1 = srv.workers_now()
    with open(str(tmp_path / "garbage.pem"), "w") as f:
        f.write("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n")
    os.replace(str(tmp_path / "garbage.pem"), cert)
    srv.signal(signal.SIGHUP)
    said = wait_for(lambda: cert in srv.stderr(), 5)
    assert said, "no message naming %s after a HUP with a bad certificate:\n%s" % (cert, srv.stderr())
    time.sleep(0.5)
    assert srv.workers_now() == gen1, "the old workers were replaced:\n" + srv.stderr()
    assert all(pid_alive(p) for p in gen1)
    for _ in range(10):
        status, body, _, _, peer = https(srv.port)
        assert status == 200 and body == b"Hello world!" and peer == old
    # A good certificate on the next HUP is taken.
    new_cert, new_key = make_cert(str(tmp_path), "good", cn="localhost-good")
    new = der(new_cert)
    replace_cert(cert, key, new_cert, new_key)
    srv.signal(signal.SIGHUP)
    assert wait_for(lambda: (lambda w: len(w - gen1) >= 2)(srv.workers_now()), 5), srv.stderr()
    assert wait_for(lambda: https(srv.port)[4] == new, 3)


def tls11_only_hello(port):
    """A client offering only TLS 1.1: refused by every configuration."""
    ctx = unverified_ctx()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the point of it
        ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_1
    ctx.set_ciphers("ALL:@SECLEVEL=0")
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        try:
            ctx.wrap_socket(raw, server_hostname="localhost").close()
            return "accepted"
        except (ssl.SSLError, OSError):
            return "refused"


def test_stats_count_full_resumed_and_failed_handshakes(tls_spindle):
    srv, _, _ = tls_spindle(workers=1)
    m0 = metrics(srv.port)
    session = https(srv.port)[3]
    for _ in range(2):
        assert https(srv.port)[0] == 200
    for _ in range(3):
        status, _, reused, _, _ = https(srv.port, session=session)
        assert status == 200 and reused
    # Three failures: plain HTTP on the TLS port, a garbled ClientHello, TLS 1.1.
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = s.recv(100)
        assert re.match(rb"HTTP/1\.[01] 400 ", answer), "plain HTTP on the TLS port: %r" % answer
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
        s.sendall(b"\x16\x03\x01\x00\x40\x01\x00\x00\x3c\x03\x03" + b"\xee" * 58)
        read_until_close(s, 5)  # whatever it answers, until it closes
    assert tls11_only_hello(srv.port) == "refused"

    scrapes = []

    def settled():
        scrapes.append(metrics(srv.port))
        return scrapes[-1] if handshakes(scrapes[-1], "failed") - handshakes(m0, "failed") >= 3 else None
    m1 = wait_for(settled, 3, step=0.1)
    assert m1, scrapes[-1]
    # Full: the first connection, two more, and each scrape's own since m0
    # (m0's was counted in m0).
    assert handshakes(m1, "full") - handshakes(m0, "full") == 3 + len(scrapes), (m0, m1)
    assert handshakes(m1, "resumed") - handshakes(m0, "resumed") == 3, (m0, m1)
    assert handshakes(m1, "failed") - handshakes(m0, "failed") == 3, (m0, m1)


def real_client_hello():
    """The first bytes a real client sends: a TLS 1.3 ClientHello record."""
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = unverified_ctx().wrap_bio(inc, out, server_hostname="localhost")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def test_stalled_handshakes_neither_stall_a_fast_client_nor_outlive_the_timeout(tls_spindle):
    srv, _, _ = tls_spindle("--tls-handshake-timeout", "1", "--max-connections", "1000", workers=1)
    hello = real_client_hello()
    assert hello[:1] == b"\x16" and len(hello) > 100
    m0 = metrics(srv.port)
    # 150 clients that send half a ClientHello and stall, 150 that send nothing.
    stalled = []
    for i in range(300):
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        if i % 2 == 0:
            s.sendall(hello[:len(hello) // 2])
        stalled.append(s)
    t0 = time.monotonic()
    worst = 0.0
    for _ in range(20):
        t = time.monotonic()
        status, body, *_ = https(srv.port, timeout=3)
        worst = max(worst, time.monotonic() - t)
        assert status == 200 and body == b"Hello world!"
    took = time.monotonic() - t0
    # Stuck behind the stalled ones, it would wait out their 1 s timeout.
    assert worst < 0.9 and took < 5, "a fast client was slowed by stalled handshakes: worst %.3f s, all %.3f s" % (
        worst, took)
    # Every stalled one is closed once the handshake timeout has passed.
    deadline = time.monotonic() + 3
    closed = 0
    for s in stalled:
        s.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            while s.recv(4096):
                pass
            closed += 1
        except OSError as e:
            closed += isinstance(e, ConnectionResetError)
        s.close()
    assert closed == 300, "%d of 300 stalled handshakes closed 4 s after a 1 s handshake timeout" % closed
    # Each counted as a failed handshake (half a ClientHello, or none at all).
    m1 = wait_for(lambda: (lambda m: m if handshakes(m, "failed") - handshakes(m0, "failed") >= 300 else None)(
        metrics(srv.port)), 2, step=0.1)
    assert m1 and handshakes(m1, "failed") - handshakes(m0, "failed") == 300, (m0, m1)
