"""An application that changes its header list after start_response
(tests/fixtures/wsgi/hardening_app.py /late): malformed entries must not crash
the worker, and well-formed late ones must not carry hop-by-hop fields or a
second Content-Length past start_response's checks. The response is the
headers start_response was given, and the same worker serves on."""
import pytest

from lib.wsgiutil import WsgiServer

# the keys of hardening_app.LATE: what /late puts into its list too late
LATE = ["short_tuple", "long_tuple", "str", "bytes_pair", "int_pair", "upgrade", "keep_alive",
        "trailer", "content_length", "crlf"]
SERVER_OWNED = {"upgrade", "keep-alive", "trailer", "x-one", "x-bytes", "x-int", "x-late",
                "set-cookie"}


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = WsgiServer("hardening_app:application", logdir=tmp_path_factory.mktemp("late"))
    s.start()
    yield s
    rc = s.stop()
    assert not s.problems(), s.problems()
    assert rc == 0, s.stderr()[-3000:]


@pytest.mark.parametrize("how", ["append", "replace", "clear"])
@pytest.mark.parametrize("body", ["list", "gen"])
@pytest.mark.parametrize("mut", LATE)
def test_late_header_change_is_ignored(srv, mut, body, how):
    [pid] = srv.worker_pids()
    with srv.connect(timeout=5) as c:
        c.request("GET", "/late?mut=%s&body=%s&how=%s" % (mut, body, how))
        r = c.response()
        assert r.status == 200, r
        assert r.body == b"late body", r
        assert r.header("X-Early") == "yes" and r.header("Content-Type") == "text/plain", r
        names = {n.lower() for n, _ in r.headers}
        assert not names & SERVER_OWNED, r.headers
        assert len(r.all("Content-Length")) <= 1, r.headers
        # the connection is still good for the next request
        c.request("GET", "/ok")
        assert c.response().body == b"ok %d" % pid
    assert srv.worker_pids() == [pid] and srv.alive()
