"""Applications for the binding's hardening tests (test_wsgi_late_headers.py,
test_wsgi_input_edges.py, test_wsgi_path_info.py, test_wsgi_header_names.py):
an app that changes its header list after start_response, wsgi.input read
by a script of calls, the environ's path keys, and header-key interning."""
import base64
import json
import os
import sys
from urllib.parse import parse_qs

# What /late appends to its header list after start_response.
LATE = {
    "short_tuple": ("X-One",),
    "long_tuple": ("X-One", "1", "2"),
    "str": "str",
    "bytes_pair": (b"X-Bytes", b"1"),
    "int_pair": ("X-Int", 1),
    "upgrade": ("Upgrade", "websocket"),
    "keep_alive": ("Keep-Alive", "timeout=999"),
    "trailer": ("Trailer", "X-Late"),
    "content_length": ("Content-Length", "1"),
    "crlf": ("X-Late", "a\r\nSet-Cookie: evil=1"),
}


def _q(environ):
    return {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}


def _json(start_response, obj):
    body = json.dumps(obj, sort_keys=True).encode()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [body]


def late(environ, start_response):
    q = _q(environ)
    headers = [("Content-Type", "text/plain"), ("X-Early", "yes")]
    start_response("200 OK", headers)
    what = LATE[q["mut"]]
    if q.get("how") == "replace":
        headers[1] = what
    elif q.get("how") == "clear":
        headers.clear()
        headers.append(what)
    else:
        headers.append(what)
    if q.get("body") == "gen":
        def gen():
            headers.append(what)   # once more, when the body is asked for
            yield b"late "
            yield b"body"
        return gen()
    return [b"late body"]


def input_script(environ, start_response):
    """ops: comma-separated calls on wsgi.input: "line", "line3" (readline(3)),
    "read", "read1" (read(1)), "readlines", "iter" (those joined with "|");
    answers each result, base64."""
    inp = environ["wsgi.input"]
    out = []
    for op in _q(environ)["ops"].split(","):
        if op == "readlines":
            out.append(b"|".join(inp.readlines()))
        elif op == "iter":
            out.append(b"|".join(inp))
        elif op.startswith("line"):
            out.append(inp.readline(int(op[4:])) if op[4:] else inp.readline())
        elif op.startswith("read"):
            out.append(inp.read(int(op[4:])) if op[4:] else inp.read())
    return _json(start_response, [base64.b64encode(b).decode() for b in out])


def env(environ, start_response):
    keys = ("PATH_INFO", "QUERY_STRING", "RAW_URI", "SCRIPT_NAME")
    return _json(start_response, {k: environ.get(k) for k in keys})


def keys(environ, start_response):
    """Which HTTP_* keys of this request are interned: sys.intern of an
    equal string built here returns the environ's own object only if it is."""
    interned = sorted(k for k in environ if k.startswith("HTTP_")
                      and sys.intern("".join(list(k))) is k)
    from spindle import _spindle
    cache = getattr(_spindle, "_header_key_cache", lambda: None)()
    return _json(start_response, {"interned": interned, "cache": cache, "pid": os.getpid()})


def ok(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok %d" % os.getpid()]


ROUTES = {"late": late, "input": input_script, "keys": keys, "ok": ok}


def application(environ, start_response):
    route = environ.get("HTTP_X_ROUTE") or environ["PATH_INFO"].strip("/")
    return ROUTES.get(route, env)(environ, start_response)
