"""PATH_INFO and QUERY_STRING come from the same split of the target as the
router's path and query: the normalized path, percent-decoded as latin-1,
and the raw query (tests/fixtures/wsgi/hardening_app.py answers its environ's
path keys). An absolute-form target without a path (`http://h?/admin`) has
the path "/", never a path taken from its query."""
import json
import urllib.parse

import pytest

from lib.wsgiutil import WsgiServer


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = WsgiServer("hardening_app:application", logdir=tmp_path_factory.mktemp("path"))
    s.start()
    yield s
    rc = s.stop()
    assert not s.problems(), s.problems()
    assert rc == 0, s.stderr()[-3000:]


def environ_of(s, target, method="GET"):
    with s.connect(timeout=5) as c:
        c.send(b"%s %s HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
               % (method.encode(), target.encode("latin-1")))
        r = c.response()
    assert r.status == 200, (target, r)
    return json.loads(r.body)


# target -> (PATH_INFO, QUERY_STRING)
CASES = [
    ("http://h?/admin", "/", "/admin"),
    ("http://h?/admin/x?y", "/", "/admin/x?y"),
    ("http://h", "/", ""),
    ("http://h?", "/", ""),
    ("http://h:80?//evil", "/", "//evil"),
    ("http://h/a%2Fb?x", "/a/b", "x"),
    ("http://h/a?b/c", "/a", "b/c"),
    ("http://h/x/../admin?q=1", "/admin", "q=1"),
    ("https://h/%61dmin", "/admin", ""),
    ("/x/../admin", "/admin", ""),
    ("//admin//x", "/admin/x", ""),
    ("/a/./b/.", "/a/b/", ""),
    ("/a%2F..%2Fb?x", "/a/../b", "x"),   # an encoded '/' is no separator: no dot-segment
]


@pytest.mark.parametrize("target,path,query", CASES, ids=[c[0] for c in CASES])
def test_path_info_is_the_routers_path(srv, target, path, query):
    e = environ_of(srv, target)
    assert (e["PATH_INFO"], e["QUERY_STRING"]) == (path, query), e
    assert e["RAW_URI"] == target


# origin-form targets without dot-segments or repeated slashes: the same
# PATH_INFO and QUERY_STRING as wsgiref.simple_server gives
PLAIN = ["/a%2Fb?x", "/caf%C3%A9?q=%C3%A9", "/%7Euser/%41", "/a+b?c+d", "/?", "/x?a?b",
         "/%25?%25", "/a;b=c/d"]


@pytest.mark.parametrize("target", PLAIN)
def test_path_info_like_wsgiref(srv, target):
    path, _, query = target.partition("?")
    e = environ_of(srv, target)
    assert e["PATH_INFO"] == urllib.parse.unquote(path, "iso-8859-1"), e
    assert e["QUERY_STRING"] == query, e
