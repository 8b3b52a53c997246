"""Eurasia's session test in Python (bench/run's sessions workload): the
WSGI twin of examples/sessions.c — each visit counts in the visitor's
spindle.session (a new session per request when no cookie comes back) —
and GET /hello, a plain hello world in the same app. As in the seed's
Eurasia demo, a periodic job runs every 0.1 s meanwhile (spindle.every)."""
import spindle

TICKS = [0]


@spindle.on_worker_start
def _start():
    spindle.every(0.1, lambda: TICKS.__setitem__(0, TICKS[0] + 1))


def application(environ, start_response):
    if environ["PATH_INFO"] == "/hello":
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "12")])
        return [b"Hello world!"]
    s = spindle.session(environ)
    n = int(s.get("visits", "0")) + 1
    s["visits"] = str(n)  # stored before it returns
    body = ("visit %d of session ...%s\n" % (n, s.id[-8:])).encode()  # the id's random end
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
