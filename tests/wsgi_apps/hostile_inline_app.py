"""For test_wsgi_inline_hostile: apps that fail after start_response, stream
from a generator that waits between chunks, read a slow upload, switch to
greenlets of their own, spawn, keep per-request state in a ContextVar and in
a threading.local, and sleep briefly (/sleep echoes its id and numbers each
call). The hub runs the first call of a turn itself (python/_spindle/common/hub.c,
run_inline)."""
import contextvars
import hashlib
import itertools
import json
import threading

import greenlet
import spindle

spindle.patch()  # before TL: threading.local becomes per greenlet

CV = contextvars.ContextVar("cv", default=None)
TL = threading.local()
SEEN = itertools.count()


def application(environ, start_response):
    path = environ["PATH_INFO"]
    q = dict(p.split("=", 1) for p in environ.get("QUERY_STRING", "").split("&") if "=" in p)
    if path == "/raise_after_sr":
        start_response("200 OK", [("Content-Type", "text/plain")])
        raise RuntimeError("after start_response")
    if path == "/raise_after_sr_wait":
        start_response("200 OK", [("Content-Type", "text/plain")])
        spindle.sleep(0.02)
        raise RuntimeError("after start_response and a wait")
    if path == "/raise_in_iter":
        start_response("200 OK", [("Content-Type", "text/plain")])
        def g():
            yield b"first"
            spindle.sleep(0.02)
            raise RuntimeError("in the iterable")
        return g()
    if path == "/gen":
        n, s = int(q.get("n", 5)), float(q.get("s", 0.05))
        start_response("200 OK", [("Content-Type", "text/plain")])
        def g():
            for i in range(n):
                if i:
                    spindle.sleep(s)
                yield b"chunk%d;" % i
        return g()
    if path == "/upload":
        inp = environ["wsgi.input"]; h = hashlib.sha256(); total = 0
        while True:
            d = inp.read(4096)
            if not d:
                break
            h.update(d); total += len(d)
        body = json.dumps({"n": total, "sha": h.hexdigest()}).encode()
        start_response("200 OK", [("Content-Type", "application/json")])
        return [body]
    if path == "/greens":
        out = []
        def child(i):
            spindle.sleep(0.01)
            out.append(i)
            return i * 10
        gs = [greenlet.greenlet(child) for i in range(4)]
        rs = [g.switch(i) for i, g in enumerate(gs)]
        # The children slept: their switch() returns when they are done or when they park
        body = json.dumps({"rs": rs, "out": out, "dead": [g.dead for g in gs]}).encode()
        start_response("200 OK", [("Content-Type", "application/json")])
        return [body]
    if path == "/spawn":
        ev = spindle.Event()
        box = []
        def job():
            spindle.sleep(0.01); box.append("ran"); ev.set()
        spindle.spawn(job)
        ev.wait(2)
        body = json.dumps({"box": box}).encode()
        start_response("200 OK", [("Content-Type", "application/json")])
        return [body]
    if path == "/spawn_in_green":
        # spawned from a greenlet of the app's own that then waits (and so
        # drives the loop): the spawned function must end back there
        ev = spindle.Event()
        box = []

        def job():
            spindle.sleep(0.01)
            box.append("ran")
            ev.set()

        def mine():
            spindle.spawn(job)
            return "set" if ev.wait(2) else "timed out"
        g = greenlet.greenlet(mine)
        got = g.switch()
        body = json.dumps({"got": got, "box": box, "dead": g.dead}).encode()
        start_response("200 OK", [("Content-Type", "application/json")])
        return [body]
    if path == "/ctx":
        rid = q.get("id")
        before_cv, before_tl = CV.get(), getattr(TL, "v", None)
        CV.set(rid); TL.v = rid
        if q.get("s"):
            spindle.sleep(float(q["s"]))
        after_cv, after_tl = CV.get(), getattr(TL, "v", None)
        body = json.dumps({"before_cv": before_cv, "before_tl": before_tl, "after_cv": after_cv,
                           "after_tl": after_tl, "g": id(greenlet.getcurrent())}).encode()
        start_response("200 OK", [("Content-Type", "application/json")])
        return [body]
    if path == "/sleep":
        spindle.sleep(float(q.get("s", 0.01)))
        body = json.dumps({"id": q.get("id"), "n": next(SEEN), "hdr": environ.get("HTTP_X_ID")}).encode()
        start_response("200 OK", [("Content-Type", "application/json")])
        return [body]
    if path == "/count":
        body = json.dumps({"n": next(SEEN)}).encode()
        start_response("200 OK", [("Content-Type", "application/json")])
        return [body]
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b"no"]
