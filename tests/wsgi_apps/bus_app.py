"""The bus from WSGI (tests/integration/test_py_bus.py): POST /pub?topic=
publishes the body (503 and the BusError when it was not published); GET
/sub?topic=&since=&timeout=&n= long-polls up to n messages ("id data"
lines, X-Bus-Last: the subscription's last_id); /leak and /leak_waiting
subscribe and return without closing (one keeps the object, one leaves a
spawned greenlet in recv); /spawned publishes from a spindle.spawn'd
greenlet; /stats is the worker's subscriber count; /import is what
publishing at import said."""
import json
import os
import urllib.parse

import spindle
from spindle import _spindle

try:
    spindle.publish("t-import", b"x")
    AT_IMPORT = "no error"
except RuntimeError as e:
    AT_IMPORT = str(e)

KEPT = []  # subscriptions an app forgot in a global: their request closes them anyway


def reply(start_response, status, body, headers=()):
    if isinstance(body, str):
        body = body.encode()
    start_response(status, [("Content-Type", "text/plain")] + list(headers))
    return [body]


def application(environ, start_response):
    path = environ["PATH_INFO"]
    q = dict(urllib.parse.parse_qsl(environ.get("QUERY_STRING", "")))
    topic = q.get("topic", "t")
    if path == "/pub":
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        try:
            return reply(start_response, "200 OK", spindle.publish(topic, body))
        except spindle.BusError as e:
            return reply(start_response, "503 Service Unavailable",
                         "publish failed: errno %d: %s" % (e.errno, e.strerror))
    if path == "/sub":
        timeout = float(q.get("timeout", "5"))
        lines, timed_out = [], 0
        with spindle.subscribe(topic, q.get("since")) as sub:
            for _ in range(int(q.get("n", "1"))):
                try:
                    m = sub.recv(timeout)
                except spindle.BusError as e:  # the client hung up (ECONNRESET)
                    lines.append("error %d\n" % e.errno)
                    break
                if m is None:
                    timed_out = 1
                    break
                assert m.topic == topic and isinstance(m.data, bytes)
                lines.append("%s %s\n" % (m.id, m.data.decode()))
            last = sub.last_id
        return reply(start_response, "200 OK", "".join(lines),
                     [("X-Bus-Last", last), ("X-Bus-Timeout", str(timed_out)),
                      ("X-Pid", str(os.getpid()))])
    if path == "/iter":  # for msg in sub: the first n
        out = []
        sub = spindle.subscribe(topic, q.get("since", "0"))
        for m in sub:
            out.append(m.data.decode())
            if len(out) == int(q.get("n", "1")):
                break
        return reply(start_response, "200 OK", " ".join(out))
    if path == "/leak":
        sub = spindle.subscribe(topic)
        KEPT.append(sub)
        del KEPT[:-5]  # the last few stay referenced, to be seen closed
        return reply(start_response, "200 OK", "left open")
    if path == "/leak_waiting":
        sub = spindle.subscribe(topic)

        def wait():
            try:
                sub.recv()
            except spindle.BusError:
                pass  # closed under it when the request ended
        spindle.spawn(wait)
        spindle.sleep(0.001)  # the greenlet starts and parks in recv
        return reply(start_response, "200 OK", "left waiting")
    if path == "/kept":
        return reply(start_response, "200 OK", json.dumps([s.closed for s in KEPT]))
    if path == "/spawned":
        done = spindle.Event()
        result = []

        def pub():
            try:
                result.append(spindle.publish(topic, q.get("data", "from a greenlet")))
            except Exception as e:  # noqa: BLE001 (told to the test)
                result.append("error: %r" % e)
            done.set()
        spindle.spawn(pub)
        done.wait(5)
        return reply(start_response, "200 OK", result[0] if result else "no result")
    if path == "/stats":
        return reply(start_response, "200 OK", json.dumps(_spindle._bus_stats()))
    if path == "/import":
        return reply(start_response, "200 OK", AT_IMPORT)
    return reply(start_response, "404 Not Found", "no such path")
