"""threading.local under spindle.patch() is per greenlet
(python/spindle/green/local.py; app tests/fixtures/wsgi/green_local_app.py,
one worker): concurrent requests that wait read their own values back, a
subclass is re-initialised with its arguments in each greenlet, dead
greenlets' dicts are freed over 10,000 requests, real threads (and
greenlets inside them) keep values of their own, and the rest of
_threading_local's semantics hold (a subprocess; no patch(), no change)."""
import json
import subprocess
import sys
import time

import pytest

from lib.greenutil import concurrent_json, get_json
from lib.wsgiutil import env_for, wsgi_server  # noqa: F401  (fixture)

N = 5


@pytest.mark.parametrize("how", ["sleep", "time", "event"])
def test_concurrent_requests_read_their_own_values(wsgi_server, how):
    s = wsgi_server("green_local_app:application")
    elapsed, results = concurrent_json(s.port, ["/wait?v=r%d&s=0.3&how=%s" % (i, how)
                                                for i in range(N)])
    assert all(r[0] == 200 for r in results), results
    assert max(r[1]["peak"] for r in results) == N, results  # they did overlap
    for i, (_, b) in enumerate(results):
        want = "r%d" % i
        assert (b["tl"], b["by_name"], b["by_thread_module"], b["dict"]) == (want,) * 4, (i, b)


def test_a_subclass_is_initialised_again_in_each_greenlet(wsgi_server):
    s = wsgi_server("green_local_app:application")
    _, results = concurrent_json(s.port, ["/sub?v=t%d" % i for i in range(N)])
    assert all(r[0] == 200 for r in results), results
    inits = set()
    for i, (_, b) in enumerate(results):
        assert b["tag"] == "t%d" % i, (i, b)
        assert b["first"][:2] == [7, "seven"] and b["again"] == b["first"][2], b
        child = b["child"]
        # a fresh greenlet: __init__(7, b="seven") ran again, the tag is not there
        assert child[:2] == [7, "seven"] and child[3] is None, b
        assert child[2] != b["first"][2], b
        inits.update((b["first"][2], child[2]))
    assert len(inits) == 2 * N, results  # one __init__ per greenlet, none shared


def test_dead_greenlets_locals_are_freed_over_10000_requests(wsgi_server):
    s = wsgi_server("green_local_app:application")
    t0 = time.monotonic()
    dirty = 0
    with s.connect() as c:
        def get(path):
            c.request("GET", path)
            r = c.response()
            assert r.status == 200, (path, r.status, r.body[:200])
            return json.loads(r.body)

        for i in range(11000):
            if i == 1000:
                base = get("/mem")["traced"]
            dirty += get("/churn?n=1")["dirty"]
            assert time.monotonic() - t0 < 15, "too slow at request %d" % i
        grown = get("/mem")["traced"] - base
    assert dirty == 0, "%d fresh greenlets saw an earlier greenlet's value" % dirty
    # a leak keeps 4 kB (two bytearrays) per request: 40 MB for 10,000
    assert grown < 2 << 20, "traced memory grew %d bytes over 10,000 requests" % grown


def test_real_threads_and_their_greenlets_keep_their_own(wsgi_server):
    s = wsgi_server("green_local_app:application", "--blocking-threads", "2")
    for _ in range(3):  # the pool's threads keep their values between calls
        status, out = get_json(s.port, "/threads")
        assert status == 200, out
        assert out["req"] == "req", out
        assert out["thread"] == {"before": None, "own": "thread", "child_saw": None}, out
        pool = out["pool"]
        assert pool["before"] in (None, "pool") and pool["own"] == "pool", out
        assert pool["child_saw"] is None, out


SEMANTICS = r'''
import threading, _thread, greenlet
import spindle
assert threading.local is _thread._local  # left alone without patch()
spindle.patch()
L = threading.local
assert _thread._local is L and L is not _thread.allocate_lock
l = L()
l.x = 1
assert l.__dict__ == {"x": 1} and vars(l) == {"x": 1}
for bad in (lambda: setattr(l, "__dict__", {}), lambda: delattr(l, "__dict__"),
            lambda: l.nope, lambda: delattr(l, "nope")):
    try:
        bad()
    except AttributeError:
        pass
    else:
        raise SystemExit("no AttributeError")
try:
    L(1)
except TypeError:
    pass
else:
    raise SystemExit("arguments to a plain local were accepted")
class S(L):
    __slots__ = ("shared",)  # slots are shared by all greenlets, as by all threads
    def __init__(self, a, b=None):
        self.a, self.b = a, b
    @property
    def p(self):
        return self.a * 10
    def __getattr__(self, name):
        return "fallback:" + name
s = S(3, b=4)
s.shared, s.own = "S", "O"
seen = greenlet.greenlet(lambda: (s.a, s.b, s.p, s.shared, s.own, s.__dict__)).switch()
assert seen == (3, 4, 30, "S", "fallback:own", {"a": 3, "b": 4}), seen
del s.own
assert s.own == "fallback:own" and isinstance(s, S) and s.__class__ is S
print("ok")
'''


def test_semantics_are_those_of_threading_local():
    r = subprocess.run([sys.executable, "-c", SEMANTICS],
                       env=env_for(), capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
