"""The HTTP layer's edges under WSGI (tests/fixtures/wsgi/edge_app.py): a 1xx
status from start_response is refused with a 500 and a log line, the
connection staying framed for the next request; an absolute-form target's
authority is HTTP_HOST and SERVER_NAME, whatever Host says."""
import pytest

from lib.wsgiutil import WsgiServer, wait_for


@pytest.fixture(scope="module")
def edge_server(tmp_path_factory):
    s = WsgiServer("edge_app:application", logdir=tmp_path_factory.mktemp("wsgi_edge"),
                   expect_tracebacks=True)
    s.start()
    yield s
    rc = s.stop()
    assert not s.problems(), s.problems()
    assert rc == 0, s.stderr()[-3000:]


@pytest.mark.parametrize("code", [100, 101, 103])
def test_1xx_start_response_is_500(edge_server, code):
    s = edge_server
    before = len(s.stderr())
    with s.connect() as c:
        c.request("GET", "/interim_%d" % code)
        c.request("GET", "/ok")  # pipelined: must get its own answer
        r = c.response()
        assert r.status == 500, r
        assert b"should not be sent" not in r.body
        r2 = c.response()
        assert (r2.status, r2.body) == (200, b"ok"), r2
    log = wait_for(lambda: s.stderr()[before:] if "1xx" in s.stderr()[before:] else "", 2)
    assert "failed serving 'GET /interim_%d'" % code in log, s.stderr()[before:]
    assert "1xx" in log, log


def test_absolute_form_authority_is_the_host(edge_server):
    with edge_server.connect() as c:
        c.request("GET", "http://a.example:8081/host", headers=[("Host", "b.example")])
        r = c.response()
        assert (r.status, r.body) == (200, b"a.example:8081 a.example 8081"), r
        c.request("GET", "/host", headers=[("Host", "b.example")])
        r = c.response()
        assert (r.status, r.body) == (200, b"b.example b.example 80"), r
