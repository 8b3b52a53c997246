"""The environ of the last call handed back to the next one with the same
head (python/_spindle/wsgi/environ.c, environ_reuse, only when nothing holds it
and nothing changed it): each call still sees a clean environ of its own —
an app's changes, to the dict or to one it kept, never reach the next call;
its wsgi.input reads its own body, REMOTE_PORT is its connection's, the
spindle.request handle is this request's; and the app, run by the hub
itself when it is the only one, is in a request (tests/fixtures/wsgi/envreuse_app.py)."""
import json

import pytest

from lib.wsgiutil import WsgiServer


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = WsgiServer("envreuse_app:application", logdir=tmp_path_factory.mktemp("envreuse"))
    s.start()
    yield s
    rc = s.stop()
    assert not s.problems(), s.problems()
    assert rc == 0, s.stderr()[-3000:]


def ask(c, path, body=None):
    c.request("POST" if body is not None else "GET", path, headers=[("X-Test", "a")], body=body)
    r = c.response()
    assert r.status == 200, r
    return json.loads(r.body)


def test_changes_to_a_released_environ_do_not_reach_the_next_call(srv):
    with srv.connect(timeout=5) as c:
        for _ in range(4):
            got = ask(c, "/mut")
            assert got["clean"] and got["x_test"] == "a" and got["path"] == "/mut", got
            assert got["in_request"], got


def test_an_environ_the_app_keeps_is_not_handed_out_again(srv):
    with srv.connect(timeout=5) as c:
        for _ in range(4):
            got = ask(c, "/held")  # the call changes the environ the last one kept
            assert got["clean"], got
            assert got["x_test"] == "a" and got["path"] == "/held", got


def test_each_call_reads_its_own_body(srv):
    with srv.connect(timeout=5) as c:
        bodies = [ask(c, "/input", body=b"one\ntwo\n")["body"] for _ in range(6)]
    # odd calls read one line (the rest may stay read ahead), even calls all
    assert sorted(set(bodies)) == ["one\n", "one\ntwo\n"], bodies
    assert bodies[0] != bodies[1], bodies


def test_the_session_handle_is_this_requests(srv):
    with srv.connect(timeout=5) as c:
        for _ in range(3):
            got = ask(c, "/sess")
            # no store configured: the handle's own error, not "another request's handle"
            assert "no session store is configured" in got["session"], got


def test_remote_port_is_each_connections_own(srv):
    with srv.connect(timeout=5) as c1, srv.connect(timeout=5) as c2:
        for _ in range(3):
            for c in (c1, c2):
                assert ask(c, "/port")["remote_port"] == str(c.sock.getsockname()[1])
