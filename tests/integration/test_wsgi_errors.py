"""Application errors (tests/fixtures/wsgi/errors_app.py): each is a 500 with
the traceback in stderr, never a crash, and the same worker serves the next
request with a 200."""
import pytest

from lib.wsgiutil import WsgiServer, wait_for


@pytest.fixture(scope="module")
def wsgi_errors_server(tmp_path_factory):
    s = WsgiServer("errors_app:application", logdir=tmp_path_factory.mktemp("wsgi_errors"),
                   expect_tracebacks=True)
    s.start()
    yield s
    rc = s.stop()
    problems = s.problems()
    assert not problems, problems
    assert rc == 0, s.stderr()[-3000:]


# route -> what the log must say about it. Errors the server finds after the
# app returned (a str item, no start_response) have no Python frame, so
# their log is the error line without a "Traceback" header.
NO_FRAME = {"str_body_list", "str_body_gen", "str_body_bare", "no_start_response",
            "no_start_response_gen", "returns_none"}
CASES = [
    ("raises", "ZeroDivisionError: app-bug-in-raises"),
    ("raises_after_start", "KeyError: 'app-bug-after-start'"),
    ("status_noreason", "'200'"),
    ("status_abc", "'abc'"),
    ("status_bytes", "TypeError"),
    ("header_crlf", "X-Injected"),
    ("header_lf", "X-Injected"),
    ("header_nontuple", "tuple"),
    ("header_not_list", "list"),
    ("header_hop", "hop-by-hop"),
    ("header_bad_name", "Bad Name"),
    ("str_body_list", "bytes"),
    ("str_body_gen", "bytes"),
    ("str_body_bare", "bytes"),
    ("no_start_response", "start_response"),
    ("no_start_response_gen", "start_response"),
    ("returns_none", "TypeError"),
    ("write_str", "bytes"),
    ("second_start_response", "start_response"),
]


@pytest.mark.parametrize("route,logged", CASES, ids=[c[0] for c in CASES])
def test_app_error_is_500_logged_and_worker_survives(wsgi_errors_server, route, logged):
    s = wsgi_errors_server
    workers = s.worker_pids()
    assert len(workers) == 1
    before = len(s.stderr())
    with s.connect() as c:
        c.request("GET", "/" + route)
        r = c.response()
        assert r.status == 500, r
        assert b"should not be sent" not in r.body and b"evil" not in r.raw_head
        assert b"Set-Cookie" not in r.raw_head
        # the connection stays usable after a 500 answered in full
        c.request("GET", "/ok")
        r2 = c.response()
        assert r2.status == 200, r2
    assert r2.body == b"ok %d" % workers[0]
    log = wait_for(lambda: s.stderr()[before:] if logged in s.stderr()[before:] else "", 2)
    assert "failed serving 'GET /%s'" % route in log, s.stderr()[before:]
    assert logged in log, s.stderr()[before:]
    if route not in NO_FRAME:
        assert "Traceback (most recent call last)" in log, log
        assert 'errors_app.py", line' in log, log
    # a fresh connection: the same worker, still alive
    r3 = s.get("/ok")
    assert r3.status == 200 and r3.body == b"ok %d" % workers[0]
    assert s.worker_pids() == workers and s.alive()


def test_many_errors_in_a_row_then_ok(wsgi_errors_server):
    s = wsgi_errors_server
    worker = s.worker_pids()
    with s.connect() as c:
        for i in range(200):
            route = CASES[i % len(CASES)][0]
            c.request("GET", "/" + route)
            assert c.response().status == 500
        c.request("GET", "/ok")
        assert c.response().status == 200
    assert s.worker_pids() == worker
