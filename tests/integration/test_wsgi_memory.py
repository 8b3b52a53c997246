"""No reference leaks: 20,000 requests through a mix of apps
(tests/fixtures/wsgi/mixed_app.py) on one worker and one keep-alive
connection; the worker's RSS and Python's object and block counts after
warm-up and at the end stay put."""
import json
import time

from lib.wsgiutil import proc_status, wsgi_server  # noqa: F401  (fixture)

TOTAL = 20000
WARMUP = 2000


def stats(c):
    c.request("GET", "/stats")
    r = c.response()
    assert r.status == 200, r
    return json.loads(r.body)


def test_20000_requests_do_not_grow_memory(wsgi_server):
    s = wsgi_server("mixed_app:application", "--keepalive-timeout", "30",
                    expect_tracebacks=True)   # /error logs a traceback each time
    [pid] = s.worker_pids()
    echo_body = bytes(range(256)) * 8
    kinds = ["hello", "env", "echo", "gen", "error"]
    counts = dict.fromkeys(kinds, 0)
    deadline = time.monotonic() + 90
    with s.connect(timeout=10) as c:
        for i in range(TOTAL):
            kind = kinds[i % len(kinds)]
            if kind == "echo":
                c.request("POST", "/echo", body=echo_body + b"%d" % i)
            else:
                c.request("GET", "/" + kind + "?i=%d" % i,
                          headers=[("X-Request", str(i)), ("Cookie", "a=%d" % i)])
            r = c.response()
            counts[kind] += 1
            if kind == "error":
                assert r.status == 500, r
            else:
                assert r.status == 200, r
                if kind == "echo":
                    assert r.body == echo_body + b"%d" % i
                elif kind == "gen":
                    assert r.body == b"".join(b"item %d\n" % k for k in range(5))
            if i + 1 == WARMUP:
                rss_warm = proc_status(pid, "VmRSS")
                warm = stats(c)
            assert time.monotonic() < deadline, "too slow: %d requests" % i
        rss_end = proc_status(pid, "VmRSS")
        end = stats(c)
    assert s.worker_pids() == [pid]            # the same worker all along
    assert end["closed"] == end["gens"] == counts["gen"]
    grow_kb = rss_end - rss_warm
    assert grow_kb < 5 * 1024, "RSS grew %d kB (%d -> %d)" % (grow_kb, rss_warm, rss_end)
    # the objects and allocated blocks of 18,000 requests must not stay behind
    assert end["objects"] - warm["objects"] < 1000, (warm, end)
    assert end["blocks"] - warm["blocks"] < 5000, (warm, end)
    assert s.stderr().count("intentional error for the memory test") >= counts["error"]
