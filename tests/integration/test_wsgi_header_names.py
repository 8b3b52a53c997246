"""Header names a client makes up must not pin memory in the worker: the
environ's HTTP_* keys of uncommon names are fresh strings, never interned
(on CPython 3.12 before gh-113993 interned strings are immortal, so
interning every new name grew a worker there by 160 bytes a name), and the
key cache is bounded. tests/fixtures/wsgi/hardening_app.py /keys reports which
of a request's keys are interned."""
import json
import os
import time

import pytest

from lib.wsgiutil import WsgiServer, proc_status

NAMES = 20000
BATCH = 250  # requests pipelined per round trip


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = WsgiServer("hardening_app:application", ["--keepalive-timeout", "30"],
                   logdir=tmp_path_factory.mktemp("names"))
    s.start()
    yield s
    rc = s.stop()
    assert not s.problems(), s.problems()
    assert rc == 0, s.stderr()[-3000:]


def keys_of(c, headers):
    c.request("GET", "/keys", headers=headers)
    r = c.response()
    assert r.status == 200, r
    return json.loads(r.body)


def test_uncommon_header_keys_are_not_interned(srv):
    with srv.connect(timeout=5) as c:
        for _ in range(2):  # the second time the name may be in a cache
            got = keys_of(c, [("X-Made-Up-Name-4711", "1"), ("Accept", "*/*"),
                              ("User-Agent", "t")])
            assert "HTTP_X_MADE_UP_NAME_4711" not in got["interned"], got
            # the fixed set of common names is prebuilt (and interned once)
            assert {"HTTP_HOST", "HTTP_ACCEPT", "HTTP_USER_AGENT"} <= set(got["interned"]), got


def test_many_new_header_names_do_not_grow_the_worker(srv):
    [pid] = srv.worker_pids()
    salt = os.urandom(4).hex()
    deadline = time.monotonic() + 30
    with srv.connect(timeout=10) as c:
        rss = {}
        for start in range(0, NAMES, BATCH):
            for i in range(start, start + BATCH):
                name = "X-Made-Up-Header-Name-%s-%020d" % (salt, i)  # 51 bytes
                c.request("GET", "/ok", headers=[(name, "v")])
            for i in range(BATCH):
                r = c.response()
                assert r.status == 200, r
            if start + BATCH in (2000, NAMES):
                rss[start + BATCH] = proc_status(pid, "VmRSS")
            assert time.monotonic() < deadline, "too slow: %d requests" % start
        cache = keys_of(c, [])["cache"]
    grow_kb = rss[NAMES] - rss[2000]
    # 3.12.1 with interned keys: +2,900 kB; fresh keys: +0 (3.11: +200 either way)
    assert grow_kb < 1024, "RSS grew %d kB over %d new header names (%s)" % (grow_kb, NAMES, rss)
    # the worker keeps a bounded number of keys, whatever names came
    assert cache is not None and 30 <= cache["common"] <= 64, cache
    assert cache["recent"] <= cache["recent_slots"] <= 1024, cache
    assert cache["sent"] <= cache["sent_slots"] <= 1024, cache
    assert srv.worker_pids() == [pid]
