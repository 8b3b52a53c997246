"""The Python coroutine toolkit under test (tests/integration/test_py_toolkit.py):
spawn, every, Event (long polling), Channel, run_blocking and the worker
hooks. time.sleep is NOT patched here: /blocking's sleep would stall the
worker without run_blocking. TOOLKIT_MARKS names the hooks' marker file."""
import json
import os
import threading
import time
from urllib.parse import parse_qs

import spindle

STATE = {"import_spawn": False, "spawn_done": False, "ticks": 0, "boom_ticks": 0}
EVENT = spindle.Event()
CHAN = spindle.Channel()
TICKER = {}
MARKS = os.environ.get("TOOLKIT_MARKS")


def _mark(what):
    if MARKS:
        with open(MARKS, "a") as f:
            f.write("%s %d\n" % (what, os.getpid()))


@spindle.on_worker_start
def _started():
    _mark("start")


@spindle.on_worker_stop
def _stopped():
    _mark("stop")
    EVENT.set()  # releases the long polls before the graceful timeout


def _at_import():
    spindle.sleep(0.05)  # cooperative: this runs in its own greenlet
    STATE["import_spawn"] = True


spindle.spawn(_at_import)


def _later(delay):
    spindle.sleep(delay)
    STATE["spawn_done"] = True


def _tick():
    STATE["ticks"] += 1


def _boom():
    STATE["boom_ticks"] += 1
    raise ValueError("boom from a periodic function")


def _spawn_boom():
    spindle.sleep(0.01)
    raise KeyError("boom from a spawned function")


def _fail():
    raise ValueError("bad input for the blocking call")


def _channel_selftest():
    """A buffered channel between a spawned producer and this request: put
    waits while full, close ends the iteration after the buffered items."""
    ch = spindle.Channel(capacity=2)
    log = []

    def produce():
        for i in range(5):
            ch.put(i)
            log.append("put%d" % i)
        ch.close()

    spindle.spawn(produce)
    spindle.sleep(0.05)  # the producer fills the buffer and waits on the third put
    log.append("len%d" % len(ch))
    got = list(ch)
    try:
        ch.put(9)
    except spindle.ChannelClosed:
        log.append("closed")
    return {"got": got, "log": log}


def _routes(path, q):
    if path == "/state":
        return dict(STATE, pid=os.getpid(), waiters=len(EVENT._waiters))
    if path == "/spawn":
        spindle.spawn(_later, float(q.get("d", "0.2")))
        return "spawned"
    if path == "/every/start":
        TICKER["h"] = spindle.every(float(q["period"]), _tick)
        return "started"
    if path == "/every/cancel":
        TICKER["h"].cancel()
        return STATE["ticks"]
    if path == "/boom":
        spindle.spawn(_spawn_boom)
        TICKER["boom"] = spindle.every(0.05, _boom)
        return "boom"
    if path == "/poll":
        return "woken" if EVENT.wait(float(q.get("timeout", "5"))) else "timeout"
    if path == "/set":
        n = len(EVENT._waiters)
        EVENT.set()
        return n
    if path == "/chan/put":
        CHAN.put(q["v"], timeout=5)
        return "put"
    if path == "/chan/get":
        return CHAN.get(timeout=float(q.get("timeout", "5")))
    if path == "/chan/selftest":
        return _channel_selftest()
    if path == "/blocking":
        t0 = time.monotonic()
        spindle.run_blocking(time.sleep, float(q.get("d", "0.5")))
        return round(time.monotonic() - t0, 3)
    if path == "/blocking/raise":
        try:
            spindle.run_blocking(_fail)
        except ValueError as e:
            return "ValueError: %s" % e
        return "no exception"
    if path == "/thread/set":  # another thread sets the Event after a while
        threading.Thread(target=lambda: (time.sleep(float(q["d"])), EVENT.set())).start()
        return "thread started"
    if path == "/thread/put":  # another thread puts three items (each waits for a get)
        threading.Thread(target=lambda: [CHAN.put("t%d" % i, timeout=5) for i in range(3)]).start()
        return "thread started"
    if path == "/thread/get":  # another thread waits for an item
        def take():
            STATE["thread_got"] = CHAN.get(timeout=5)
        threading.Thread(target=take).start()
        return "thread started"
    if path == "/fast":
        return "fast"
    return None


def application(environ, start_response):
    q = {k: v[0] for k, v in parse_qs(environ["QUERY_STRING"]).items()}
    try:
        out = _routes(environ["PATH_INFO"], q)
    except TimeoutError as e:
        out = "TimeoutError: %s" % e
    if out is None:
        start_response("404 Not Found", [("Content-Length", "0")])
        return [b""]
    body = json.dumps(out).encode()
    start_response("200 OK", [("Content-Type", "application/json"),
                              ("Content-Length", str(len(body)))])
    return [body]
