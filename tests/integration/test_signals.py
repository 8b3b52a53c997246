"""Stopping (issue 5): TERM is graceful (in-flight requests complete, each
keep-alive connection's next request is answered with Connection: close,
exit status 0), INT is graceful the first time and immediate the second,
QUIT is immediate. Under continuous keep-alive load a graceful stop cuts no
response short; the only errors a client sees are refusals."""
import os
import signal
import threading
import time

import pytest

from lib.client import Conn, HTTPError

from lib.procutil import is_refused, pid_alive, w_spindle_factory


@pytest.fixture
def w_spindle(tmp_path):
    yield from w_spindle_factory(tmp_path)


def send_sleep(srv, ms, n):
    conns = []
    for _ in range(n):
        c = Conn(srv.addr, timeout=8)
        c.send(b"GET /sleep?ms=%d HTTP/1.1\r\nHost: x\r\n\r\n" % ms)
        conns.append(c)
    return conns


def assert_refused(srv):
    with pytest.raises(OSError) as ei:
        Conn(srv.addr, timeout=2).close()
    assert is_refused(ei.value), ei.value


def assert_workers_gone(srv):
    left = [p for p in srv.seen_children if pid_alive(p)]
    assert not left, "workers still running after the master exited: %s" % left


def check_sleep_response(c, ms, t_sent):
    r = c.read_response()
    assert r.status == 200, r
    assert r.body == b"slept %d ms\n" % ms, r
    assert r.connection_close(), "a response during a graceful stop must carry Connection: close: %r" % r.raw
    assert time.monotonic() - t_sent >= ms / 1000 - 0.05
    assert c.wait_eof(3) == "eof", "connection not closed cleanly after its last response"


def test_term_during_slow_requests_completes_them(w_spindle):
    srv = w_spindle(workers=2)
    srv.children()
    t_sent = time.monotonic()
    conns = send_sleep(srv, 2000, 6)
    time.sleep(0.5)
    srv.signal(signal.SIGTERM)
    try:
        for c in conns:
            check_sleep_response(c, 2000, t_sent)
    finally:
        for c in conns:
            c.close()
    rc = srv.wait_exit(5)
    assert rc == 0, "exit status %s\n%s" % (rc, srv.stderr())
    assert time.monotonic() - t_sent < 5
    assert_workers_gone(srv)
    assert_refused(srv)
    err = srv.stderr()
    assert "graceful stop" in err and err.count("exiting after") == 2, err
    assert "graceful timeout" not in err, err


def test_new_connection_during_graceful_stop_is_refused_or_served(w_spindle):
    """While in-flight requests finish, a new client must be refused or
    answered, not accepted into a backlog nobody serves and reset at exit."""
    srv = w_spindle(workers=2)
    srv.children()
    t_sent = time.monotonic()
    slow = send_sleep(srv, 2000, 2)
    time.sleep(0.3)
    srv.signal(signal.SIGTERM)
    time.sleep(0.3)
    outcome = None
    try:
        c = Conn(srv.addr, timeout=5)
    except OSError as e:
        assert is_refused(e), e
        outcome = "refused"
    else:
        with c:
            t = time.monotonic()
            try:
                r = c.exchange("/")
                outcome = "served"
                assert r.status == 200 and r.body == b"Hello world!" and r.connection_close(), r
            except HTTPError as e:
                pytest.fail("a connection made during the graceful stop got no answer: %s after "
                            "%.2f s (server exited: %s)"
                            % (e, time.monotonic() - t, srv.proc.poll() is not None))
    try:
        for c in slow:
            check_sleep_response(c, 2000, t_sent)
    finally:
        for c in slow:
            c.close()
    assert srv.wait_exit(5) == 0
    assert outcome in ("refused", "served")


def keepalive_load(srv, sig, busy=6, idle=3, reconnect=False, before=1.0, limit=10.0):
    """Clients on keep-alive connections (busy ones back-to-back, alternating
    GET / and POST /echo; idle ones a request every 300 ms); sig is sent to
    the master after `before` seconds. Each connection must end after a
    complete response (Connection: close, then a clean EOF) or with a clean
    EOF between requests. With reconnect, clients open a new connection
    after each such end until one is refused."""
    lock = threading.Lock()
    st = {"ok": 0, "ok_after_sig": 0, "close": 0, "eof_between": 0, "refused": 0,
          "conns": 0, "bad": [], "unfinished": 0}
    t_sig = [None]
    deadline = time.monotonic() + limit
    body = b"x" * 3000

    def bad(what):
        with lock:
            st["bad"].append((round(time.monotonic() - t0, 3), what))

    def client(kind, idx):
        conn = None
        n = 0
        for _ in range(100000):
            if time.monotonic() > deadline:
                with lock:
                    st["unfinished"] += 1
                break
            if conn is None:
                try:
                    conn = Conn(srv.addr, timeout=5)
                    with lock:
                        st["conns"] += 1
                except OSError as e:
                    if is_refused(e):
                        with lock:
                            st["refused"] += 1
                        if t_sig[0] is None:
                            bad("refused before the signal")
                    else:
                        bad("connect: %r" % e)
                    break
            n += 1
            try:
                if kind == "busy" and n % 2 == 0:
                    payload = body + b"%d-%d" % (idx, n)
                    r = conn.exchange("/echo", method="POST", body=payload)
                    good = r.status == 200 and r.body == payload
                else:
                    r = conn.exchange("/")
                    good = r.status == 200 and r.body == b"Hello world!"
            except HTTPError as e:
                if e.kind == "eof" and conn.responses > 0:
                    # closed cleanly between requests (at its keep-alive timeout)
                    with lock:
                        st["eof_between"] += 1
                else:
                    bad("%s on a connection after %d responses" % (e, conn.responses))
                conn.close()
                conn = None
                if reconnect and e.kind == "eof" and conn is None:
                    continue
                break
            if not good:
                bad("wrong response %r" % r)
            with lock:
                st["ok"] += 1
                if t_sig[0] is not None:
                    st["ok_after_sig"] += 1
            if r.connection_close():
                how = conn.wait_eof(3)
                if how != "eof":
                    bad("after a Connection: close response: %s, not a clean EOF" % how)
                with lock:
                    st["close"] += 1
                conn.close()
                conn = None
                if not reconnect:
                    break
            elif kind == "idle":
                time.sleep(0.3)
        if conn is not None:
            conn.close()

    threads = [threading.Thread(target=client, args=("busy", i)) for i in range(busy)]
    threads += [threading.Thread(target=client, args=("idle", i)) for i in range(idle)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(before)
    with lock:
        st["ok_before_sig"] = st["ok"]
    t_sig[0] = time.monotonic()
    srv.signal(sig)
    for t in threads:
        t.join(limit + 8)
    st["threads"] = len(threads)
    st["alive_threads"] = sum(t.is_alive() for t in threads)
    return st


def test_graceful_stop_under_keepalive_load_ends_connections_cleanly(w_spindle):
    srv = w_spindle(workers=2)
    st = keepalive_load(srv, signal.SIGTERM, reconnect=False)
    rc = srv.wait_exit(8)
    assert not st["bad"], "bad endings:\n  %s\nstats: %s" % ("\n  ".join(map(str, st["bad"][:10])), st)
    assert st["alive_threads"] == 0 and st["unfinished"] == 0, st
    assert st["ok_before_sig"] > 50, st
    # Every client was answered once more with Connection: close (the idle
    # ones send every 300 ms, under the 1 s keep-alive timeout).
    assert st["close"] + st["eof_between"] == st["threads"], st
    assert st["close"] >= st["threads"] - 1, st
    assert rc == 0, "exit status %s\n%s" % (rc, srv.stderr())
    assert_workers_gone(srv)
    assert_refused(srv)


def test_graceful_stop_under_keepalive_load_with_reconnects(w_spindle):
    """Clients reconnect after each Connection: close: the only errors they
    may see are refusals (ECONNREFUSED) once the server stops listening."""
    srv = w_spindle(workers=2)
    st = keepalive_load(srv, signal.SIGTERM, reconnect=True)
    rc = srv.wait_exit(8)
    assert not st["bad"], "bad endings:\n  %s\nstats: %s" % ("\n  ".join(map(str, st["bad"][:10])), st)
    assert st["alive_threads"] == 0 and st["unfinished"] == 0, st
    assert st["ok_before_sig"] > 50 and st["close"] >= 1, st
    # Every client ended on a refusal.
    assert st["refused"] == st["threads"], st
    assert rc == 0, "exit status %s\n%s" % (rc, srv.stderr())
    assert_workers_gone(srv)


def test_int_once_is_graceful(w_spindle):
    srv = w_spindle(workers=2)
    srv.children()
    t_sent = time.monotonic()
    conns = send_sleep(srv, 1500, 3)
    time.sleep(0.4)
    srv.signal(signal.SIGINT)
    try:
        for c in conns:
            check_sleep_response(c, 1500, t_sent)
    finally:
        for c in conns:
            c.close()
    assert srv.wait_exit(5) == 0, srv.stderr()
    assert_workers_gone(srv)
    assert_refused(srv)


def assert_cut(conns):
    for c in conns:
        with pytest.raises(HTTPError) as ei:
            c.read_response()
        assert ei.value.kind in ("eof", "reset"), ei.value
        c.close()


@pytest.mark.parametrize("sigs", [("INT", "INT"), ("QUIT",), ("TERM", "QUIT")])
def test_immediate_stop(w_spindle, sigs):
    srv = w_spindle(workers=2)
    srv.children()
    conns = send_sleep(srv, 4000, 3)
    time.sleep(0.4)
    for i, name in enumerate(sigs):
        if i:
            time.sleep(0.3)
        t_last = time.monotonic()
        srv.signal(getattr(signal, "SIG" + name))
    rc = srv.wait_exit(2.5)
    took = time.monotonic() - t_last
    assert rc is not None, "still running 2.5 s after %s\n%s" % ("+".join(sigs), srv.stderr())
    assert took < 1.5, "immediate stop took %.2f s" % took
    assert_cut(conns)
    assert_workers_gone(srv)
    assert_refused(srv)
    assert "immediate stop" in srv.stderr(), srv.stderr()


def test_ctrl_c_to_process_group(w_spindle):
    """A terminal's Ctrl-C signals the master and the workers at once: once is
    still graceful, twice is immediate."""
    srv = w_spindle(workers=2)
    srv.children()
    assert os.getpgid(srv.pid) == srv.pid
    t_sent = time.monotonic()
    short = send_sleep(srv, 1000, 2)
    time.sleep(0.3)
    os.killpg(srv.pid, signal.SIGINT)
    try:
        for c in short:
            check_sleep_response(c, 1000, t_sent)
    finally:
        for c in short:
            c.close()
    assert srv.wait_exit(5) == 0, srv.stderr()
    assert_workers_gone(srv)

    srv2 = w_spindle(workers=2)
    srv2.children()
    long = send_sleep(srv2, 4000, 2)
    time.sleep(0.3)
    os.killpg(srv2.pid, signal.SIGINT)
    time.sleep(0.3)
    t = time.monotonic()
    os.killpg(srv2.pid, signal.SIGINT)
    assert srv2.wait_exit(2.5) is not None, srv2.stderr()
    assert time.monotonic() - t < 1.5
    assert_cut(long)
    assert_workers_gone(srv2)
