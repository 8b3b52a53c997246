"""Real clients inside requests under spindle.patch(): urllib over HTTP and
TLS, redis-py, psycopg2 and SQLAlchemy, select / poll / selectors, a slow
resolver, and the app's own threads (a pool, a daemon) that must see the
stdlib's behaviour. Each route reports what it saw as JSON."""
import concurrent.futures
import json
import select
import selectors
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from urllib.parse import parse_qs

import spindle

spindle.patch()

from spindle.green import dns as _green_dns  # noqa: E402  (after patch: the resolver hook)

STATE = {"daemon": None}

# Outside a request (import time, on the loop's thread): the stdlib's calls.
time.sleep(0.001)
socket.getaddrinfo("localhost", 80)
select.select([], [], [], 0.001)
with threading.Lock():
    pass
_real_gai = _green_dns._orig["getaddrinfo"]


def slow_gai(host, *a, **kw):
    """'slow.test' resolves like localhost after 0.3 s of real blocking."""
    if host == "slow.test":
        STATE.setdefault("resolver_threads", []).append(threading.current_thread().name)
        _green_dns._orig_sleep(0.3)
        host = "127.0.0.1"
    return _real_gai(host, *a, **kw)


_green_dns._orig_sleep = time._spindle_orig_sleep
_green_dns._orig["getaddrinfo"] = slow_gai


def raw_get(port, path, wait):
    """GET over a raw socket; wait(sock) is the readiness wait under test."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(b"GET %s HTTP/1.0\r\nHost: x\r\n\r\n" % path.encode())
        data = b""
        while True:
            wait(s)
            chunk = s.recv(65536)
            if not chunk:
                return data.split(b"\r\n\r\n", 1)[-1].decode()
            data += chunk
    finally:
        s.close()


def wait_select(s):
    assert select.select([s], [], [], 10)[0], "select timed out"


def wait_poll(s):
    p = select.poll()
    p.register(s, select.POLLIN)
    assert p.poll(10000), "poll timed out"


def wait_selector(s):
    with selectors.DefaultSelector() as sel:
        sel.register(s, selectors.EVENT_READ)
        assert sel.select(10), "selector timed out"


def select_rw():
    """select() on one fd for read and write at once (one watch, both ways):
    a socket with a full send buffer and nothing to read waits until the
    timeout, then sees what the peer sent."""
    a, b = socket.socketpair()
    try:
        a.setblocking(False)
        try:
            while True:
                a.send(b"x" * 65536)
        except BlockingIOError:
            pass
        t0 = time.monotonic()
        first = select.select([a], [a], [], 0.2)
        waited = time.monotonic() - t0
        b.send(b"y")
        second = select.select([a], [a], [], 5)
        return {"first": [len(x) for x in first], "waited": round(waited, 3),
                "second": [len(x) for x in second]}
    finally:
        a.close()
        b.close()


WAITS = {"select": wait_select, "poll": wait_poll, "selectors": wait_selector}


def thread_job(port):
    """What another thread of the app does after patch(): all stdlib."""
    t0 = time.monotonic()
    time.sleep(0.05)
    slept = time.monotonic() - t0
    body = raw_get(port, "/hello", wait_select)
    addr = socket.getaddrinfo("localhost", port)[0][4]
    return {"slept": round(slept, 3), "body": body, "addr": list(addr)}


def daemon(port):
    try:
        STATE["daemon"] = thread_job(port)
    except Exception as e:  # reported by /threads
        STATE["daemon"] = {"error": repr(e)}


def db_route(path, q):
    if path == "/redis":
        import redis
        r = redis.Redis(host="127.0.0.1", port=int(q["port"]), socket_timeout=10)
        try:
            return {"blpop": r.blpop(q["key"], timeout=float(q["s"])), "ping": r.ping()}
        finally:
            r.close()
    if path == "/pg":
        import psycopg2
        conn = psycopg2.connect(q["dsn"])
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT pg_sleep(%s), 42", (float(q["s"]),))
                return cur.fetchone()[1]
        finally:
            conn.close()
    if path == "/sqla":
        import sqlalchemy
        if q["url"] not in ENGINES:
            ENGINES[q["url"]] = sqlalchemy.create_engine(q["url"], pool_size=20)
        eng = ENGINES[q["url"]]
        with eng.connect() as c:
            return c.execute(sqlalchemy.text("SELECT pg_sleep(:s), 7"), {"s": float(q["s"])}).one()[1]
    raise KeyError(path)


def route(path, q):
    if path == "/http":
        ctx = ssl.create_default_context(cafile=q["ca"]) if "ca" in q else None
        with urllib.request.urlopen(q["url"], timeout=20, context=ctx) as r:
            return r.read().decode()
    if path == "/wait":
        return raw_get(int(q["port"]), q["path"], WAITS[q["how"]])
    if path == "/timeout":
        # The app's timeout still holds on a cooperative socket.
        t0 = time.monotonic()
        try:
            urllib.request.urlopen(q["url"], timeout=float(q["t"])).read()
            return "no timeout"
        except (socket.timeout, urllib.error.URLError) as e:
            return {"timeout": type(getattr(e, "reason", e)).__name__,
                    "after": round(time.monotonic() - t0, 3)}
    if path == "/lock":
        # Requests take turns on a lock while each holds it across a wait.
        t0 = time.monotonic()
        with LOCK:
            waited = time.monotonic() - t0
            time.sleep(float(q["s"]))
        return round(waited, 3)
    if path == "/spawn":
        import greenlet
        port = int(q["port"])
        return greenlet.greenlet(lambda: raw_get(port, "/z", WAITS["select"])).switch()
    if path == "/rw":
        return select_rw()
    if path == "/dns":
        infos = socket.getaddrinfo(q["host"], 80, socket.AF_INET, socket.SOCK_STREAM)
        return {"addr": infos[0][4][0], "threads": STATE.get("resolver_threads", [])}
    if path in ("/redis", "/pg", "/sqla"):
        return db_route(path, q)
    if path == "/threads":
        port = int(q["port"])
        if STATE["daemon"] is None and "started" not in STATE:
            STATE["started"] = True
            threading.Thread(target=daemon, args=(port,), daemon=True).start()
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            fut = pool.submit(thread_job, port)
            while not fut.done():
                time.sleep(0.01)  # cooperative here, in the request
            out = {"pool": fut.result()}
        deadline = time.monotonic() + 5
        while STATE["daemon"] is None and time.monotonic() < deadline:
            time.sleep(0.01)
        out["daemon"] = STATE["daemon"]
        return out
    if path == "/hello":
        return "hello"
    raise KeyError(path)


ENGINES = {}
LOCK = threading.Lock()  # made after patch(): greenlet-aware


def application(environ, start_response):
    q = {k: v[0] for k, v in parse_qs(environ["QUERY_STRING"]).items()}
    try:
        body, status = json.dumps(route(environ["PATH_INFO"], q)), "200 OK"
    except Exception as e:
        body, status = json.dumps({"error": repr(e)}), "500 Internal Server Error"
    body = body.encode()
    start_response(status, [("Content-Type", "application/json"),
                            ("Content-Length", str(len(body)))])
    return [body]
