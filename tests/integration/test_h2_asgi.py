"""ASGI over HTTP/2 (h2c, python3-h2): the same app as tests/fixtures/asgi'
spec tests, its streams served concurrently on one connection — the scope
says http_version "2" (it said "1.1"), bodies stream both ways, a streamed
response arrives whole."""
import json

from lib.asgiutil import asgi  # noqa: F401  (fixture)
from lib.h2util import h2_requests


def test_asgi_scope_and_bodies_over_h2c(asgi):
    s = asgi("asgi_spec:app")
    body = b"x" * 200_000  # past the initial 64 KiB window: flow control
    res = h2_requests(s.port, [("GET", "/scope?a=1", [], b""),
                               ("POST", "/echo", [("content-length", str(len(body)))], body),
                               ("GET", "/stream", [], b"")], timeout=15)
    (st1, _, b1), (st2, _, b2), (st3, _, b3) = res
    scope = json.loads(b1)
    assert st1 == 200 and scope["http_version"] == "2", scope
    assert scope["method"] == "GET" and scope["path"] == "/scope" and scope["query_string"] == "a=1"
    assert st2 == 200 and b2 == body
    assert st3 == 200 and b3
