"""test_h2_frameworks.py — the WSGI framework matrix (test_wsgi_frameworks.py:
Flask, Django, web.py, Bottle, Falcon, unmodified) once more with spindle's
side over HTTP/2 (h2c, python3-h2): status, body and the app's headers must
still match what wsgiref answers over HTTP/1.1.
"""
import pytest

import test_wsgi_frameworks as matrix
from lib.h2util import h2_requests
from test_wsgi_frameworks import test_bottle, test_django, test_falcon, test_flask, test_webpy_your_ip  # noqa: F401
from lib.wsgiutil import reference_server, wsgi_server  # noqa: F401  (fixture)

_h1_fetch = matrix.fetch


@pytest.fixture(autouse=True)
def spindle_over_h2(monkeypatch):
    """Pair's spindle server is asked over h2c; wsgiref stays on HTTP/1.1."""
    h2_ports = {}  # port -> the app spec
    pair_init = matrix.Pair.__init__

    def init(self, start, spec):
        pair_init(self, start, spec)
        h2_ports[self.sp.port] = spec

    def fetch(port, method, path, headers=None, body=None):
        if port not in h2_ports:
            return _h1_fetch(port, method, path, headers, body)
        h = dict({"Host": "127.0.0.1"}, **(headers or {}))
        extra = [(k.lower(), v) for k, v in h.items() if k.lower() != "host"]
        if body:
            extra.append(("content-length", str(len(body))))
        status, hdrs, data = h2_requests(port, [(method, path, extra, body or b"")], timeout=15,
                                         authority=h["Host"], header_list=True)[0]
        # What only the protocol's name changes: apps echoing SERVER_PROTOCOL,
        # and bottle's redirect, 303 to HTTP/1.1 clients only (302 to others).
        data = data.replace(b'"SERVER_PROTOCOL": "HTTP/2.0"', b'"SERVER_PROTOCOL": "HTTP/1.1"')
        if status == 302 and h2_ports[port].startswith("bottle_app"):
            status = 303
        return status, [(k, v) for k, v in hdrs if not k.startswith(":")], data

    monkeypatch.setattr(matrix.Pair, "__init__", init)
    monkeypatch.setattr(matrix, "fetch", fetch)
