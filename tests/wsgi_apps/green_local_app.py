"""For test_py_green_local: threading.local under spindle.patch() — per
request across concurrent waits (/wait), a subclass re-initialised with its
arguments in each greenlet (/sub), fresh greenlets that see nothing of the
last one and whose dicts are freed (/churn, /mem), and real threads with
greenlets of their own (/threads)."""
import gc
import itertools
import json
import threading
import time
import tracemalloc

import greenlet
import spindle

spindle.patch()  # before the locals below and the late import
import green_local_late as late  # noqa: E402

tracemalloc.start()
TL = threading.local()
INITS = itertools.count(1)
ACTIVE = [0, 0]  # in flight, most in flight seen


class Sub(threading.local):
    def __init__(self, a, b=None):
        self.a, self.b, self.init_no = a, b, next(INITS)


SUB = Sub(7, b="seven")


def wait(how, s):
    if how == "event":
        spindle.Event().wait(s)  # never set: the wait times out
    elif how == "time":
        time.sleep(s)  # patched
    else:
        spindle.sleep(s)


def do_wait(q):
    v, s = q["v"], float(q.get("s", 0.3))
    ACTIVE[0] += 1
    ACTIVE[1] = max(ACTIVE)
    TL.v = v
    late.BY_NAME.v = v
    late.BY_THREAD_MODULE.v = v
    wait(q.get("how", "sleep"), s)
    ACTIVE[0] -= 1
    return {"tl": TL.v, "by_name": late.BY_NAME.v, "by_thread_module": late.BY_THREAD_MODULE.v,
            "dict": TL.__dict__.get("v"), "peak": ACTIVE[1]}


def do_sub(q):
    SUB.tag = q["v"]
    first = (SUB.a, SUB.b, SUB.init_no)
    wait("sleep", float(q.get("s", 0.3)))
    child = greenlet.greenlet(lambda: (SUB.a, SUB.b, SUB.init_no, getattr(SUB, "tag", None)))
    return {"tag": SUB.tag, "first": first, "child": child.switch(), "again": SUB.init_no}


def fresh_greenlet_round():
    def run():
        saw = getattr(TL, "v", None)
        TL.v = bytearray(2000)  # a leak of these would show in /mem
        SUB.x = bytearray(2000)
        return saw
    return greenlet.greenlet(run).switch()


def do_churn(q):
    return {"dirty": sum(fresh_greenlet_round() is not None for _ in range(int(q.get("n", 1))))}


def do_mem(q):
    gc.collect()
    return {"traced": tracemalloc.get_traced_memory()[0]}


def in_thread_view(token):
    """What a thread's own code sees: nothing of the request's value, and a
    greenlet inside the thread nothing of the thread's."""
    before = getattr(TL, "v", None)
    TL.v = token
    child = greenlet.greenlet(lambda: (getattr(TL, "v", None), setattr(TL, "v", "child")))
    child_saw = child.switch()[0]
    return {"before": before, "own": TL.v, "child_saw": child_saw}


def do_threads(q):
    TL.v = "req"
    out = {}
    t = threading.Thread(target=lambda: out.update(thread=in_thread_view("thread")))
    t.start()
    t.join(5)
    out["pool"] = spindle.run_blocking(in_thread_view, "pool")
    out["req"] = TL.v
    return out


ROUTES = {"/wait": do_wait, "/sub": do_sub, "/churn": do_churn, "/mem": do_mem,
          "/threads": do_threads}


def application(environ, start_response):
    q = dict(p.split("=", 1) for p in environ.get("QUERY_STRING", "").split("&") if "=" in p)
    fn = ROUTES.get(environ["PATH_INFO"])
    if fn is None:
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"no such route"]
    body = json.dumps(fn(q)).encode()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [body]
