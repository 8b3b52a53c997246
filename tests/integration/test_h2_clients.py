"""test_h2_clients.py — real HTTP/2 clients against h2c (prior knowledge):
curl, nghttp (nghttp2-client), h2load and python3-h2 multiplexing; static
files (sendfile, read in chunks into DATA), the access log's protocol field,
and WSGI applications (PEP 3333 validator, large bodies both ways,
wsgi.file_wrapper) over HTTP/2 unmodified.
"""
import hashlib
import json
import os
import subprocess

import pytest

from lib.server import CURL
import h2.events
from lib.h2util import h2_client, h2_requests, start
from lib.wsgiutil import wsgi_server  # noqa: F401  (fixture)


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    root = tmp_path_factory.mktemp("root")
    (root / "big.bin").write_bytes(os.urandom(300000))
    (root / "small.txt").write_text("static over h2\n")
    log = root.parent / "h2-access.log"
    # --demo: GET / and /echo beside the files (a root alone serves only its files)
    s, stop = start(tmp_path_factory, "--root", str(root), "--demo", "--access-log", str(log))
    s.root, s.log = root, log
    yield s
    stop()


def curl(*args):
    return subprocess.run([CURL, "-sS", "--max-time", "5", "--http2-prior-knowledge"] + list(args),
                          capture_output=True, timeout=10)


class TestCurl:
    def test_get(self, srv):
        r = curl("-w", "%{http_version} %{http_code}", "http://127.0.0.1:%d/" % srv.port)
        assert r.stdout == b"Hello world!2 200"

    def test_post_echo(self, srv):
        body = os.urandom(200000)
        r = subprocess.run([CURL, "-sS", "--max-time", "5", "--http2-prior-knowledge", "--data-binary",
                            "@-", "-H", "Content-Type: application/x-test",
                            "http://127.0.0.1:%d/echo" % srv.port], input=body, capture_output=True,
                           timeout=10)
        assert r.stdout == body

    def test_http2_upgrade_not_required(self, srv):
        # plain `curl --http2` over http:// asks for Upgrade: h2c; it is answered as HTTP/1.1
        r = subprocess.run([CURL, "-sS", "--max-time", "5", "--http2", "-w", " %{http_version}",
                            "http://127.0.0.1:%d/" % srv.port], capture_output=True, timeout=10)
        assert r.stdout == b"Hello world! 1.1"

    def test_static_file_in_chunks(self, srv):
        r = curl("http://127.0.0.1:%d/big.bin" % srv.port)
        assert r.stdout == (srv.root / "big.bin").read_bytes()

    def test_static_head(self, srv):
        r = curl("-I", "http://127.0.0.1:%d/small.txt" % srv.port)
        assert b"HTTP/2 200" in r.stdout and b"content-length: 15" in r.stdout.lower()


class TestNghttp:
    def test_get_and_multiplexed_assets(self, srv):
        base = "http://127.0.0.1:%d" % srv.port
        r = subprocess.run(["nghttp", "-n", "--stat", base + "/", base + "/small.txt",
                            base + "/big.bin"], capture_output=True, timeout=10)
        assert r.returncode == 0, r.stderr  # non-zero if any stream failed
        assert b"/small.txt" in r.stdout and b"/big.bin" in r.stdout and r.stdout.count(b" 200 ") == 3

    def test_h2load_short_run(self, srv):
        r = subprocess.run(["h2load", "-n", "2000", "-c", "4", "-m", "10",
                            "http://127.0.0.1:%d/" % srv.port], capture_output=True, timeout=20)
        assert b"2000 succeeded" in r.stdout, r.stdout


class TestPythonH2:
    def test_many_streams_multiplexed(self, srv):
        reqs = [("GET", "/", (), b"")] * 20 + [("POST", "/echo", (), b"%d" % i * 1000) for i in range(10)] + \
               [("GET", "/small.txt", (), b""), ("GET", "/nope", (), b"")]
        out = h2_requests(srv.port, reqs)
        assert [o[0] for o in out[:20]] == [200] * 20
        assert [o[2] for o in out[20:30]] == [b"%d" % i * 1000 for i in range(10)]
        assert out[30][2] == b"static over h2\n" and out[31][0] == 404

    def test_access_log_says_http2(self, srv):
        h2_requests(srv.port, [("GET", "/small.txt?log=1", (), b"")])
        subprocess.run(["sleep", "1.2"])  # the log is flushed once a second
        assert '"GET /small.txt?log=1 HTTP/2.0" 200' in srv.log.read_text()


class TestWsgi:
    def test_validated_app(self, wsgi_server, tmp_path):
        (tmp_path / "f.bin").write_bytes(b"w" * 100000)
        s = wsgi_server("validated:application", env={"WSGI_TEST_FILES": str(tmp_path)})
        out = h2_requests(s.port, [("GET", "/env", (), b""), ("GET", "/hello", (), b""),
                                   ("POST", "/read_all", (("content-length", "11"),), b"hello world"),
                                   ("GET", "/file?name=f.bin", (), b"")])
        env = json.loads(out[0][2])
        assert out[0][0] == 200 and env["SERVER_PROTOCOL"] == "HTTP/2.0"
        assert env["HTTP_HOST"] == "localhost"
        assert out[1][0] == 200
        got = json.loads(out[2][2])
        assert out[2][0] == 200 and got["len"] == 11 and got["sha"] == hashlib.sha256(b"hello world").hexdigest()
        assert out[3][0] == 200 and out[3][2] == b"w" * 100000

    def test_large_bodies_both_ways(self, wsgi_server):
        s = wsgi_server("stream_app:application")
        up = os.urandom(1 << 20)
        out = h2_requests(s.port, [("POST", "/upload", (), up), ("GET", "/download?mb=3", (), b"")],
                          timeout=20)
        n, digest, _ = out[0][2].decode().split()
        assert int(n) == len(up) and digest == hashlib.sha256(up).hexdigest()
        assert out[1][2] == b"".join(hashlib.sha256(b"%d" % i).digest() * 32768 for i in range(3))


class TestEarlyHints:
    def test_103_then_the_answer(self, spindle):
        import pathlib
        from lib.server import BIN
        from lib.h2util import Raw
        from hyperframe.frame import HeadersFrame
        app = str(pathlib.Path(BIN).resolve().parent / "tests" / "fixtures" / "c" / "app_http_edge.so")
        srv = spindle("--app", app)
        r = Raw(srv.port)
        sid = r.headers(path="/hints")
        fs = r.until(lambda f: isinstance(f, HeadersFrame) and f.stream_id == sid, timeout=2)
        assert fs and fs[-1].fields == [(":status", "103"), ("link", "</a.css>; rel=preload; as=style"),
                                        ("link", "</b.js>; rel=preload; as=script")]
        h, body, _ = r.response(sid)
        assert h[":status"] == "200" and body == b"rc=0\n"
        h, body, _ = r.response(r.headers(path="/hints?bad"))  # an injected value: refused, no 103
        assert h[":status"] == "200" and body == b"rc=-22\n"


class TestTrailers:
    def test_trailers_after_the_body(self, spindle):
        """sp_res_finish_trailers over HTTP/2: a HEADERS frame with
        END_STREAM after the DATA (names lower-cased), also with a declared
        length; a refused name sends nothing (python h2 as the client)."""
        import pathlib
        from lib.server import BIN
        app = str(pathlib.Path(BIN).resolve().parent / "tests" / "fixtures" / "c" / "app_http_edge.so")
        srv = spindle("--app", app)
        for path, body in (("/trailers", b"rc=0 body\n"), ("/trailers?len", b"rc=0 body\n"),
                           ("/trailers?bad", b"rc=-22 body\n")):
            s, c = h2_client(srv.port)
            sid = c.get_next_available_stream_id()
            c.send_headers(sid, [(":method", "GET"), (":scheme", "http"), (":path", path),
                                 (":authority", "localhost")], end_stream=True)
            s.sendall(c.data_to_send())
            got, trailers, ended = b"", None, False
            while not ended:
                data = s.recv(65536)
                assert data, "closed before the stream ended"
                for ev in c.receive_data(data):
                    if isinstance(ev, h2.events.DataReceived):
                        got += ev.data
                        c.acknowledge_received_data(ev.flow_controlled_length, sid)
                    elif isinstance(ev, h2.events.TrailersReceived):
                        trailers = ev.headers
                    elif isinstance(ev, h2.events.StreamReset):
                        raise AssertionError("reset: %r" % ev)
                    ended = ended or isinstance(ev, h2.events.StreamEnded)
                s.sendall(c.data_to_send())
            s.close()
            assert got == body, (path, got)
            assert trailers == [("x-checksum", "sha256=abc"), ("grpc-status", "0")], (path, trailers)
        # curl as a second client: it shows the trailer fields after the head's
        p = subprocess.run([CURL, "-sv", "--http2-prior-knowledge",
                            "http://127.0.0.1:%d/trailers" % srv.port],
                           capture_output=True, timeout=10)
        assert p.stdout == b"rc=0 body\n" and b"< x-checksum: sha256=abc" in p.stderr, p.stderr
