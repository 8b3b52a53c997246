"""PEP 3333 scenarios, each wrapped in wsgiref.validate.validator: any rule
the server breaks becomes an AssertionError (a 500 and a traceback in the
server's stderr), and WSGIWarnings are errors too. The endpoints answer
JSON describing what they saw; the tests check the values.

Close calls are recorded in memory (one worker) and reported by /closed.
"""
import base64
import hashlib
import json
import os
import sys
import warnings
from urllib.parse import parse_qs
from wsgiref.validate import WSGIWarning, validator

import spindle

warnings.simplefilter("error", WSGIWarning)

CLOSED = {}    # id -> close() calls
ENDED = {}     # id -> how the generator ended
STARTED = {}   # id -> items yielded
FILES = os.environ.get("WSGI_TEST_FILES", "/tmp")


def _json(start_response, obj, status="200 OK", extra=()):
    body = json.dumps(obj, sort_keys=True).encode()
    start_response(status, [("Content-Type", "application/json"),
                            ("Content-Length", str(len(body)))] + list(extra))
    return [body]


def _q(environ):
    return {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}


def _unwrapped_input(environ):
    inp = environ["wsgi.input"]
    return getattr(inp, "input", inp)  # validator's InputWrapper holds the server's


def env(environ, start_response):
    out = {k: v for k, v in environ.items() if isinstance(v, str)}
    out["_keys"] = sorted(environ)
    out["_types"] = {k: type(v).__name__ for k, v in environ.items() if k.startswith("wsgi.")}
    out["_version"] = list(environ["wsgi.version"])
    out["_flags"] = [environ["wsgi.multithread"], environ["wsgi.multiprocess"],
                     environ["wsgi.run_once"], environ.get("wsgi.input_terminated")]
    out["_errors"] = [hasattr(environ["wsgi.errors"], a) for a in ("write", "flush",
                                                                   "writelines")]
    environ["wsgi.errors"].write("wsgi.errors works\n")
    environ["wsgi.errors"].flush()
    out["_path_bytes"] = base64.b64encode(environ["PATH_INFO"].encode("latin-1")).decode()
    return _json(start_response, out)


def _describe(pieces):
    data = b"".join(pieces)
    return {"len": len(data), "sha": hashlib.sha256(data).hexdigest(),
            "pieces": [base64.b64encode(p).decode() for p in pieces[:5000]],
            "npieces": len(pieces)}


def read_n(environ, start_response):
    n = int(_q(environ).get("n", "7"))
    inp = environ["wsgi.input"]
    pieces = []
    while True:
        b = inp.read(n)
        assert type(b) is bytes and len(b) <= n
        if not b:
            break
        pieces.append(b)
    # after the end, reads keep returning b""
    assert inp.read(n) == b"" and inp.readline() == b""
    return _json(start_response, _describe(pieces))


def read_all(environ, start_response):
    # read() with no size is allowed by PEP 3333 (the validator insists on a
    # size, so this goes to the server's object directly)
    inp = _unwrapped_input(environ)
    first = int(_q(environ).get("first", "0"))
    pieces = [inp.read(first)] if first else []
    pieces.append(inp.read())
    assert inp.read() == b""
    return _json(start_response, _describe(pieces))


def read_lines(environ, start_response):
    limit = _q(environ).get("limit")
    inp = environ["wsgi.input"]
    pieces = []
    while True:
        b = inp.readline(int(limit)) if limit else inp.readline()
        if limit:
            assert len(b) <= int(limit)
        if not b:
            break
        pieces.append(b)
    return _json(start_response, _describe(pieces))


def read_linelist(environ, start_response):
    hint = _q(environ).get("hint")
    inp = environ["wsgi.input"]
    lines = inp.readlines(int(hint)) if hint else inp.readlines()
    rest = inp.read(1 << 20)
    d = _describe(lines)
    d["rest"] = base64.b64encode(rest).decode()
    return _json(start_response, d)


def read_iter(environ, start_response):
    inp = environ["wsgi.input"]
    raw = _unwrapped_input(environ)
    pieces = list(raw) if _q(environ).get("raw") else list(inp)
    return _json(start_response, _describe(pieces))


def hello(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"Hello world!"]


def exc_early(environ, start_response):
    """start_response, then an error before anything is sent: the app
    replaces the response with exc_info (allowed while nothing is sent)."""
    start_response("200 OK", [("Content-Type", "text/plain"), ("X-First", "1")])
    try:
        raise ValueError("changed my mind")
    except ValueError:
        start_response("503 Service Unavailable", [("Content-Type", "text/plain"),
                                                   ("X-Second", "1")], sys.exc_info())
    return [b"replaced"]


class Marker(Exception):
    pass


def exc_late(environ, start_response):
    """The head is out (write() sent bytes): start_response with exc_info
    must re-raise the given exception."""
    write = start_response("200 OK", [("Content-Type", "text/plain")])
    write(b"part1;")
    outcome = "no-raise"
    try:
        raise Marker("late")
    except Marker:
        info = sys.exc_info()
        try:
            start_response("500 Oops", [("Content-Type", "text/plain")], info)
        except Marker as e:
            outcome = "reraised-same" if e is info[1] else "reraised-other"
        except Exception as e:  # pragma: no cover - a wrong exception type
            outcome = "raised-" + type(e).__name__
    return [outcome.encode()]


def write_callable(environ, start_response):
    write = start_response("200 OK", [("Content-Type", "text/plain")])
    write(b"one,")
    write(b"two,")
    return iter([b"three,", b"four"])


def write_only(environ, start_response):
    write = start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "9")])
    write(b"abc")
    write(b"def")
    write(b"ghi")
    return []


class Recorded:
    """An iterable whose close() is recorded, around a generator."""

    def __init__(self, ident, gen):
        self.ident, self.gen = ident, gen

    def __iter__(self):
        return self.gen

    def close(self):
        CLOSED[self.ident] = CLOSED.get(self.ident, 0) + 1
        self.gen.close()


def gen_close(environ, start_response):
    """A generator whose fate (ENDED) and close() calls (CLOSED) are recorded:
    mode=ok (runs out), raise (raises mid-iteration), slow (many chunks
    with pauses: the client goes away), cl (more than Content-Length: the
    server stops asking). bare=1 returns the generator itself (its close()
    shows as GeneratorExit)."""
    q = _q(environ)
    ident, mode = q["id"], q.get("mode", "ok")
    CLOSED.pop(ident, None)
    ENDED.pop(ident, None)
    STARTED[ident] = 0
    headers = [("Content-Type", "text/plain")]
    if mode == "cl":
        headers.append(("Content-Length", "6"))
    start_response("200 OK", headers)

    def gen():
        try:
            for i in range(int(q.get("n", "3")) if mode != "slow" else 2000):
                STARTED[ident] += 1
                if mode == "raise" and i == 2:
                    raise RuntimeError("boom mid-iteration")
                if mode == "slow":
                    spindle.sleep(0.01)
                    yield b"x" * 65536
                else:
                    yield b"%03d" % i
            ENDED[ident] = "exhausted"
        except GeneratorExit:
            ENDED[ident] = "generator-exit"
            raise
        except RuntimeError:
            ENDED[ident] = "raised"
            raise
    if q.get("bare"):
        g = gen()
        return g
    return Recorded(ident, gen())


class ClosingIterable:
    """Not a generator: an iterable class with close()."""

    def __init__(self, ident):
        self.ident = ident
        self.items = [b"a", b"b", b"c"]

    def __iter__(self):
        return iter(self.items)

    def close(self):
        CLOSED[self.ident] = CLOSED.get(self.ident, 0) + 1


def iter_close(environ, start_response):
    ident = _q(environ)["id"]
    CLOSED.pop(ident, None)
    start_response("200 OK", [("Content-Type", "text/plain")])
    return ClosingIterable(ident)


def closed(environ, start_response):
    ident = _q(environ)["id"]
    return _json(start_response, {"closed": CLOSED.get(ident), "ended": ENDED.get(ident),
                                  "started": STARTED.get(ident)})


def file_wrapper(environ, start_response):
    q = _q(environ)
    path = os.path.join(FILES, os.path.basename(q["name"]))
    f = open(path, "rb")
    if "seek" in q:
        f.seek(int(q["seek"]))
    headers = [("Content-Type", "application/octet-stream")]
    if "cl" in q:
        headers.append(("Content-Length", q["cl"]))
    start_response("200 OK", headers)
    return environ["wsgi.file_wrapper"](f, 32768)


def cl_over(environ, start_response):
    """Content-Length 10, but 30 bytes offered: only 10 may go out."""
    mode = _q(environ).get("mode", "gen")
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "10")])
    if mode == "list":
        return [b"0123456789abcdefghijABCDEFGHIJ"]
    if mode == "many":
        return [b"01234", b"56789abcde", b"fghij"]
    return iter([b"0123456789", b"abcdefghij", b"ABCDEFGHIJ"])


def no_cl(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return iter([b"first,", b"second,", b"third"])


def padded_header(environ, start_response):
    """Header values with surrounding whitespace (Django's Set-Cookie values
    start with a space): PEP 3333 allows them; the server trims them."""
    start_response("200 OK", [("Content-Type", "text/plain"), ("X-Padded", "  v  "),
                              ("Set-Cookie", " a=1; Path=/")])
    return [b"padded"]


def empty(environ, start_response):
    start_response("204 No Content", [])
    return []


ROUTES = {
    "/env": env, "/read_n": read_n, "/read_all": read_all, "/readline": read_lines,
    "/readlines": read_linelist, "/iter": read_iter, "/hello": hello, "/exc_early": exc_early,
    "/exc_late": exc_late, "/write": write_callable, "/write_only": write_only,
    "/gen": gen_close, "/iter_close": iter_close, "/closed": closed,
    "/file": file_wrapper, "/cl_over": cl_over, "/no_cl": no_cl, "/empty": empty,
    "/padded": padded_header,
}


def dispatch(environ, start_response):
    path = environ.get("PATH_INFO", "")
    for prefix, fn in ROUTES.items():
        if path == prefix:
            return fn(environ, start_response)
    if path.startswith("/env/") or path.startswith("/caf"):
        return env(environ, start_response)
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b"no route " + path.encode("latin-1")]


application = validator(dispatch)
# the same routes without the validator (sendfile path, read() with no size)
plain = dispatch
