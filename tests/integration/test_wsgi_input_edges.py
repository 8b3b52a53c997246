"""wsgi.input at the edges of a body (tests/fixtures/wsgi/hardening_app.py
/input runs a script of calls): one byte left after a line, readline(size)
and read(1) at the very end, each compared with io.BytesIO doing the same
calls on the same bytes."""
import base64
import io
import json

import pytest

from lib.wsgiutil import WsgiServer


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = WsgiServer("hardening_app:application", logdir=tmp_path_factory.mktemp("input"))
    s.start()
    yield s
    rc = s.stop()
    assert not s.problems(), s.problems()
    assert rc == 0, s.stderr()[-3000:]


def expected(body, ops):
    f, out = io.BytesIO(body), []
    for op in ops.split(","):
        if op == "readlines":
            out.append(b"|".join(f.readlines()))
        elif op == "iter":
            out.append(b"|".join(f))
        elif op.startswith("line"):
            out.append(f.readline(int(op[4:])) if op[4:] else f.readline())
        elif op.startswith("read"):
            out.append(f.read(int(op[4:])) if op[4:] else f.read())
    return out


def run(s, body, ops, chunked=False):
    with s.connect(timeout=5) as c:
        if chunked:
            data = b"".join(b"1\r\n%s\r\n" % body[i:i + 1] for i in range(len(body))) + b"0\r\n\r\n"
            c.send(b"POST /input?ops=%s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                   b"Connection: close\r\n\r\n%s" % (ops.encode(), data))
        else:
            c.request("POST", "/input?ops=" + ops, body=body, headers=[("Connection", "close")])
        r = c.response()
    assert r.status == 200, r
    return [base64.b64decode(p) for p in json.loads(r.body)]


CASES = [
    (b"ab\nc", "line,line,line"),
    (b"ab\nc", "line,read"),
    (b"ab\nc", "line,read1,read1"),
    (b"ab\nc", "line,line5,read"),
    (b"ab\nc", "line,readlines"),
    (b"ab\nc", "line,iter"),
    (b"ab\ncd", "line,read1,line"),
    (b"ab\ncd", "line,read1,read"),
    (b"ab\ncd", "line1,line1,line,line1,line1,line1"),
    (b"abcd", "line3,line,read"),
    (b"abc", "line2,read"),
    (b"a\nb\nc\n", "line,line,line,line"),
    (b"ab\n\n", "line,line,read"),
    (b"ab\nc", "read2,line,read"),
    (b"\nx", "line,line1,line"),
    (b"ab\nc", "line,line0,read0,line"),
    (b"ab\nc", "line,line1,read0,read1"),
]


@pytest.mark.parametrize("chunked", [False, True], ids=["length", "chunked"])
@pytest.mark.parametrize("body,ops", CASES, ids=["%r-%s" % c for c in CASES])
def test_input_edges_like_bytesio(srv, body, ops, chunked):
    assert run(srv, body, ops, chunked) == expected(body, ops)


def test_readline_twice_with_one_byte_left(srv):
    assert run(srv, b"ab\nc", "line,line") == [b"ab\n", b"c"]
    assert srv.worker_pids() and srv.alive()
