"""spindle.session from WSGI (tests/integration/test_py_sessions.py): /count
bumps a counter in the session, /clear, /regen and /ttl?N call the session's
methods, /late opens the session after the first body write (an error);
misuse() stores a value that is not str."""
import os

import spindle


def application(environ, start_response):
    path = environ["PATH_INFO"]
    if path == "/late":
        write = start_response("200 OK", [("Content-Type", "text/plain")])
        write(b"head sent\n")
        try:
            spindle.session(environ)
            return [b"no error"]
        except RuntimeError as e:
            return [str(e).encode()]
    try:
        s = spindle.session(environ)
    except RuntimeError as e:
        start_response("500 Internal Server Error", [("Content-Type", "text/plain")])
        return [str(e).encode()]
    if path == "/clear":
        s.clear()
    elif path == "/regen":
        old = s.id
        s.regenerate()
        s["old"] = old
    elif path == "/ttl":
        s.ttl = int(environ["QUERY_STRING"])
    elif path == "/count":
        s["count"] = str(int(s.get("count", "0")) + 1)
    body = "id=%s count=%s keys=%s ttl=%d pid=%d old=%s" % (
        s.id, s.get("count", "0"), ",".join(sorted(s)), s.ttl, os.getpid(), s.get("old", "-"))
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [body.encode()]


def misuse(environ, start_response):
    """What a wrong call raises, as text: a value that is not str."""
    s = spindle.session(environ)
    try:
        s["n"] = 1
        out = "no error"
    except TypeError as e:
        out = str(e)
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [out.encode()]
