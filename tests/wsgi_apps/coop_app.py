"""Cooperative waits under spindle.patch(): time.sleep, spindle.sleep, and
a urllib client inside a request. Tracks how many calls are in the app at
once (/max)."""
import json
import time
import urllib.request
from urllib.parse import parse_qs

import spindle

spindle.patch()

STATE = {"inflight": 0, "max": 0, "calls": 0}


def _reply(start_response, body, status="200 OK"):
    start_response(status, [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


def application(environ, start_response):
    path = environ["PATH_INFO"]
    q = {k: v[0] for k, v in parse_qs(environ["QUERY_STRING"]).items()}
    if path == "/max":
        return _reply(start_response, json.dumps(STATE).encode())
    if path == "/reset":
        STATE.update(max=0, calls=0)
        return _reply(start_response, b"reset")
    STATE["inflight"] += 1
    STATE["calls"] += 1
    STATE["max"] = max(STATE["max"], STATE["inflight"])
    try:
        secs = float(q.get("s", "0.5"))
        if path == "/tsleep":
            time.sleep(secs)
            return _reply(start_response, b"slept")
        if path == "/ssleep":
            spindle.sleep(secs)
            return _reply(start_response, b"slept")
        if path == "/fetch":
            url = "http://127.0.0.1:%s%s" % (q["port"], q.get("path", "/ssleep"))
            with urllib.request.urlopen(url, timeout=20) as r:
                data = r.read()
            return _reply(start_response, b"fetched:" + data)
        if path == "/hello":
            return _reply(start_response, b"hello")
        return _reply(start_response, b"no route", "404 Not Found")
    finally:
        STATE["inflight"] -= 1
