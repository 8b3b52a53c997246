"""TLS hardening (a security review): a session resumes only under the trust
settings and the SNI name it was made under; the ticket secret itself steps
forward every period (an old ticket never opens again, even with the clock
set back); the SNI name reaches the application (SSL_TLS_SNI), and a Host
of another certificate's name than the SNI's gets 421. openssl s_client
with -sess_out/-sess_in is the client ("Reused" or "New")."""
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from lib.server import CURL
from lib.proctools import wait_for
from lib.tlsutil import OPENSSL, certs  # noqa: F401 (the session fixture)

TLS12, TLS13 = "-tls1_2", "-tls1_3"


def s_client(port, certs, sni=None, version=TLS13, sess_in=None, sess_out=None, client=None,  # noqa: F811
             host=None, path="/"):
    """One GET over openssl s_client: (handshake line "New, ..."/"Reused, ..."
    or "" when it failed, the server certificate's subject line, the reply)."""
    cmd = [OPENSSL, "s_client", "-connect", "127.0.0.1:%d" % port, version, "-CAfile", certs.ca,
           "-ign_eof"]
    cmd += ["-servername", sni] if sni else ["-noservername"]
    if sess_in:
        cmd += ["-sess_in", str(sess_in)]
    if sess_out:
        cmd += ["-sess_out", str(sess_out)]
    if client:
        cmd += ["-cert", certs.cert(client), "-key", certs.key(client)]
    req = "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (path, host or sni or "localhost")
    p = subprocess.run(cmd, input=req.encode(), capture_output=True, timeout=20)
    out = p.stdout.decode("latin-1")
    hs = next((ln for ln in out.splitlines() if ln.startswith(("New,", "Reused,"))), "")
    if "Cipher is (NONE)" in hs:
        hs = ""  # no handshake: s_client still prints a "New" line
    subj = next((ln for ln in out.splitlines() if ln.startswith("subject=")), "")
    reply = out[out.find("HTTP/1.1 "):] if "HTTP/1.1 " in out else ""
    return hs, subj, reply


def status(reply):
    return int(reply.split(" ", 2)[1]) if reply.startswith("HTTP/1.1 ") else 0


def new_workers(srv, old, timeout=10):
    """Waits until every worker serving is one started after old."""
    assert wait_for(lambda: srv.serving_pids() and not set(srv.serving_pids()) & old, timeout), \
        srv.stderr()


# ---- 1. a change of trust invalidates earlier sessions -------------------------------------

@pytest.mark.parametrize("version", [TLS12, TLS13])
def test_a_new_ca_file_on_hup_ends_mtls_sessions(spindle, certs, tmp_path, version):  # noqa: F811
    ca = tmp_path / "clients-ca.pem"
    shutil.copy(certs.ca, ca)
    srv = spindle(*certs.flags(), "--ca-certs", str(ca), "--cert-reqs", "required")
    sess = tmp_path / "s.pem"
    hs, _, reply = s_client(srv.port, certs, "localhost", version, sess_out=sess, client="client")
    assert hs.startswith("New") and status(reply) == 200, (hs, reply, srv.stderr())
    hs, _, reply = s_client(srv.port, certs, "localhost", version, sess_in=sess)
    assert hs.startswith("Reused") and status(reply) == 200  # same trust: resumes
    old = set(srv.serving_pids())
    shutil.copy(certs.path("otherca.pem"), ca)  # the same path, another CA
    os.kill(srv.pid, signal.SIGHUP)
    new_workers(srv, old)
    # Saved under the old CA, without a certificate now: a full handshake,
    # which --cert-reqs required refuses.
    hs, _, reply = s_client(srv.port, certs, "localhost", version, sess_in=sess)
    assert not hs.startswith("Reused") and status(reply) != 200, (hs, reply)
    # The new CA's client is let in, the old one's is not.
    assert status(s_client(srv.port, certs, "localhost", version, client="stranger")[2]) == 200
    assert status(s_client(srv.port, certs, "localhost", version, client="client")[2]) != 200


@pytest.mark.parametrize("version", [TLS12, TLS13])
def test_cert_reqs_made_required_on_hup_ends_sessions_without_a_certificate(spindle, certs, tmp_path,  # noqa: F811
                                                                            version, monkeypatch):
    # cli_reload keeps the reparsed config file's strings (reload.c says so:
    # a small leak per reload); under ASan that alone is not this test's.
    (tmp_path / "lsan.supp").write_text("leak:cli_reload\n")
    monkeypatch.setenv("LSAN_OPTIONS", "suppressions=%s" % (tmp_path / "lsan.supp"))
    conf = tmp_path / "spindle.conf"
    conf.write_text("ca-certs = %s\ncert-reqs = optional\n" % certs.ca)
    srv = spindle(*certs.flags(), "--config", str(conf))
    sess = tmp_path / "s.pem"
    hs, _, reply = s_client(srv.port, certs, "localhost", version, sess_out=sess)
    assert hs.startswith("New") and status(reply) == 200, (hs, reply, srv.stderr())
    old = set(srv.serving_pids())
    conf.write_text("ca-certs = %s\ncert-reqs = required\n" % certs.ca)
    os.kill(srv.pid, signal.SIGHUP)
    new_workers(srv, old)
    hs, _, reply = s_client(srv.port, certs, "localhost", version, sess_in=sess)
    assert not hs.startswith("Reused") and status(reply) != 200, (hs, reply)
    hs, _, reply = s_client(srv.port, certs, "localhost", version, client="client")
    assert hs.startswith("New") and status(reply) == 200


def test_the_same_settings_on_hup_keep_sessions(spindle, certs, tmp_path):  # noqa: F811
    srv = spindle(*certs.flags(), "--ca-certs", certs.ca, "--cert-reqs", "optional")
    sess = tmp_path / "s.pem"
    assert s_client(srv.port, certs, "localhost", sess_out=sess, client="client")[0].startswith("New")
    old = set(srv.serving_pids())
    os.kill(srv.pid, signal.SIGHUP)
    new_workers(srv, old)
    hs, _, reply = s_client(srv.port, certs, "localhost", sess_in=sess)
    assert hs.startswith("Reused") and status(reply) == 200, (hs, reply)


# ---- 2. no resumption across SNI names -------------------------------------------------------

@pytest.mark.parametrize("version", [TLS12, TLS13])
def test_a_session_resumes_only_under_its_own_sni_name(spindle, certs, tmp_path, version):  # noqa: F811
    srv = spindle(*certs.flags("a", "b"))
    sess = tmp_path / "s.pem"
    for first, then, same in [("a.test", "b.test", False), ("b.test", "a.test", False),
                              ("a.test", "www.a.test", False),  # one certificate, another name
                              ("b.test", "x.b.test", False), ("a.test", None, False),
                              (None, "a.test", False), ("a.test", "a.test", True),
                              ("b.test", "B.TEST", True), (None, None, True)]:
        hs, _, reply = s_client(srv.port, certs, first, version, sess_out=sess)
        assert hs.startswith("New") and status(reply) == 200, (first, hs, reply)
        hs, subj, reply = s_client(srv.port, certs, then, version, sess_in=sess)
        assert hs.startswith("Reused" if same else "New"), (first, then, hs)
        want = "CN = %s" % ("b.test" if (then or "").lower().endswith("b.test") else "a.test")
        assert want in subj and status(reply) == 200, (first, then, subj, reply)


# ---- 3. the ticket secret itself rotates -----------------------------------------------------

SHIM = r"""
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
/* time() moved by the seconds in $SPINDLE_TEST_CLOCK_FILE (read each call). */
time_t time(time_t *t) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long off = 0;
    const char *p = getenv("SPINDLE_TEST_CLOCK_FILE");
    FILE *f = p ? fopen(p, "r") : NULL;
    if (f) {
        if (fscanf(f, "%ld", &off) != 1)
            off = 0;
        fclose(f);
    }
    time_t r = ts.tv_sec + off;
    if (t)
        *t = r;
    return r;
}
"""


@pytest.fixture
def clocked(spindle, tmp_path, monkeypatch):
    """clocked(*flags) -> (server, set_clock(seconds)): spindle with time()
    moved by an offset the test sets (an LD_PRELOAD shim)."""
    src, so, clock = tmp_path / "clock.c", tmp_path / "clock.so", tmp_path / "clock"
    src.write_text(SHIM)
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(so), str(src)], check=True, timeout=60)
    clock.write_text("0\n")
    monkeypatch.setenv("LD_PRELOAD", str(so))
    monkeypatch.setenv("SPINDLE_TEST_CLOCK_FILE", str(clock))
    monkeypatch.setenv("ASAN_OPTIONS", os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0")

    def set_clock(seconds):
        tmp = tmp_path / "clock.tmp"
        tmp.write_text("%d\n" % seconds)
        os.replace(tmp, clock)
        time.sleep(0.6)  # the master's tick and the worker's heartbeat step the ratchet

    def start(*flags):
        srv = spindle(*flags)
        monkeypatch.delenv("LD_PRELOAD")  # the clients keep the real clock
        return srv, set_clock
    return start


def next_hour_start():
    """The offset to a point 10 s into the next hour (an epoch boundary)."""
    now = time.time()
    return int(3600 - now % 3600 + 10)


def test_an_old_ticket_never_resumes_once_the_secret_moved_on(clocked, certs, tmp_path):  # noqa: F811
    srv, set_clock = clocked(*certs.flags())
    base = next_hour_start()
    set_clock(base)
    s0, s1 = tmp_path / "s0.pem", tmp_path / "s1.pem"
    assert s_client(srv.port, certs, "localhost", sess_out=s0)[0].startswith("New")
    # One period on: the previous secret still decrypts (and a new ticket is made).
    set_clock(base + 3600)
    hs, _, reply = s_client(srv.port, certs, "localhost", sess_in=s0, sess_out=s1)
    assert hs.startswith("Reused") and status(reply) == 200, (hs, reply, srv.stderr())
    # Two on: the first ticket's secret is gone.
    set_clock(base + 7200)
    assert s_client(srv.port, certs, "localhost", sess_in=s0)[0].startswith("New")
    # Back to the first period: the secret it was made under was wiped, not
    # kept and re-derived, so it still cannot be opened ...
    set_clock(base + 60)
    hs, _, reply = s_client(srv.port, certs, "localhost", sess_in=s0)
    assert hs.startswith("New") and status(reply) == 200, (hs, reply)
    # ... nor by a worker the master forks now (it stepped on too; a HUP
    # starts new workers and keeps the ratchet).
    old = set(srv.serving_pids())
    os.kill(srv.pid, signal.SIGHUP)
    new_workers(srv, old)
    assert wait_for(lambda: status(s_client(srv.port, certs, "localhost")[2]) == 200, 10)
    assert s_client(srv.port, certs, "localhost", sess_in=s0)[0].startswith("New")
    # The ticket of the second period, made by a worker now gone, resumes
    # on the new one: its secret is shared by ratcheting alike.
    set_clock(base + 7200)
    hs, _, reply = s_client(srv.port, certs, "localhost", sess_in=s1)
    assert hs.startswith("Reused") and status(reply) == 200, (hs, reply)


def test_after_rotations_a_ticket_resumes_on_either_worker(clocked, certs, tmp_path):  # noqa: F811
    srv, set_clock = clocked(*certs.flags(), "--workers", "2", "--reuse-port")
    base = next_hour_start()
    set_clock(base + 3 * 3600)  # three steps in each worker and in the master
    assert wait_for(lambda: len(srv.serving_pids()) == 2, 10)
    sess = tmp_path / "s.pem"
    assert s_client(srv.port, certs, "localhost", sess_out=sess)[0].startswith("New")
    hs = [s_client(srv.port, certs, "localhost", sess_in=sess)[0] for _ in range(12)]
    assert all(h.startswith("Reused") for h in hs), hs


# ---- 4. the SNI name for applications, and 421 ---------------------------------------------

SNI_APP = """
import json


def application(environ, start_response):
    body = json.dumps({k: environ.get(k) for k in ("SSL_TLS_SNI", "HTTP_HOST")}).encode()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [body]
"""


def test_wsgi_environ_has_the_sni_name(certs, tmp_path):  # noqa: F811
    from lib.wsgiutil import WsgiServer
    (tmp_path / "sni_app.py").write_text(SNI_APP)
    srv = WsgiServer("sni_app:application", certs.flags("a", "b"), chdir=tmp_path, logdir=tmp_path)
    srv.start()
    try:
        for sni, host in [("a.test", "a.test"), ("x.b.test", "x.b.test"), (None, "a.test")]:
            hs, _, reply = s_client(srv.port, certs, sni, host=host)
            assert status(reply) == 200, (sni, reply)
            env = json.JSONDecoder().raw_decode(reply.partition("\r\n\r\n")[2])[0]
            assert env == {"SSL_TLS_SNI": sni, "HTTP_HOST": host}, env
    finally:
        srv.stop()
    assert not srv.problems(), srv.problems()


@pytest.mark.parametrize("version", [TLS12, TLS13])
def test_a_host_of_another_certificate_than_the_sni_gets_421(spindle, certs, version):  # noqa: F811
    srv = spindle(*certs.flags("a", "b"))
    for sni, host, want in [("a.test", "b.test", 421), ("a.test", "x.b.test:443", 421),
                            ("b.test", "www.a.test", 421), ("a.test", "a.test", 200),
                            ("a.test", "www.a.test:%d" % srv.port, 200),  # the same certificate
                            ("b.test", "X.B.TEST", 200), ("a.test", "elsewhere.test", 200),
                            (None, "b.test", 200),  # no SNI: nothing to compare
                            ("elsewhere.test", "b.test", 200)]:  # an SNI no certificate names
        reply = s_client(srv.port, certs, sni, version, host=host)[2]
        assert status(reply) == want, (sni, host, reply)


def test_421_over_http2(spindle, certs):  # noqa: F811
    srv = spindle(*certs.flags("a", "b"))
    url = "https://a.test:%d/" % srv.port
    base = [CURL, "-sS", "--http2", "--cacert", certs.ca, "--resolve", "a.test:%d:127.0.0.1" % srv.port,
            "-o", "/dev/null", "-w", "%{http_version} %{response_code}"]
    p = subprocess.run(base + [url], capture_output=True, timeout=20)
    assert p.stdout == b"2 200", p
    p = subprocess.run(base + ["-H", "Host: b.test", url], capture_output=True, timeout=20)
    assert p.stdout == b"2 421", p


def test_one_certificate_never_421(spindle, certs):  # noqa: F811
    srv = spindle(*certs.flags("a"))
    assert status(s_client(srv.port, certs, "a.test", host="b.test")[2]) == 200
