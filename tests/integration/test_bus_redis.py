"""The bus on Redis Streams (tests/fixtures/c/app_bus.c on build/spindle with
--workers 2): two spindle instances on one throwaway redis-server (append
only, so a restart keeps the streams) share topics in order; since-id
resumes; Redis stopped mid-way gives the publisher a 503 and a waiting
subscriber everything Redis accepted once it is back; a slow subscriber is
cut with a log line; a message over max_message is refused (413).
(The memory bus across workers: test_bus_shared.py.)"""
import concurrent.futures
import pathlib
import time
import urllib.error
import urllib.request
import uuid

import pytest

from lib.server import BIN
from lib.sessutil import REDIS, Redis

APP = str(pathlib.Path(BIN).parent / "tests" / "fixtures" / "c" / "app_bus.so")


@pytest.fixture
def redis(tmp_path):
    if not pathlib.Path(REDIS).exists():
        pytest.skip("redis-server is not installed (scripts/deps.sh)")
    r = Redis(tmp_path, appendonly=True)  # a restart keeps the streams
    yield r
    r.stop()


@pytest.fixture
def bus_spindle(spindle, monkeypatch, redis):
    def start(query="", workers="2"):
        monkeypatch.delenv("BUS_SPEC", raising=False)
        return spindle("--app", APP, "--workers", workers,
                       "--bus", "redis://127.0.0.1:%d%s" % (redis.port, query))
    return start


def url(srv, path):
    return "http://127.0.0.1:%d%s" % (srv.port, path)


def pub(srv, topic, data):
    """(status, body) of POST /pub."""
    req = urllib.request.Request(url(srv, "/pub?topic=" + topic), data=data.encode(), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode().strip()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode().strip()


def sub(srv, topic, since=None, n=1, timeout_ms=5000, slow_ms=0, block_ms=0):
    """(lines [(id, data)], headers) of the long poll GET /sub."""
    q = "/sub?topic=%s&n=%d&timeout_ms=%d&slow_ms=%d&block_ms=%d" % (topic, n, timeout_ms, slow_ms,
                                                                   block_ms)
    if since:
        q += "&since=" + since
    with urllib.request.urlopen(url(srv, q), timeout=timeout_ms / 1000 + 10) as r:
        body = r.read().decode()
        lines = [tuple(line.split(" ", 1)) for line in body.splitlines()]
        return lines, r.headers


def ids_increase(ids):
    parsed = [tuple(int(x) for x in i.split("-")) for i in ids]
    return all(a < b for a, b in zip(parsed, parsed[1:]))


def topic():
    return "t-" + uuid.uuid4().hex[:8]


def test_two_instances_share_topics_in_order(bus_spindle):
    a, b = bus_spindle(), bus_spindle()
    t = topic()
    st, start = pub(a, t, "start")
    assert st == 200, start
    msgs = ["m%d" % i for i in range(8)]
    with concurrent.futures.ThreadPoolExecutor(6) as ex:
        # several long polls on each instance, so both workers of each serve some
        subs = [ex.submit(sub, srv, t, start, len(msgs), 10000) for srv in (a, b, a, b, a, b)]
        time.sleep(0.3)
        for i, m in enumerate(msgs):
            st, _ = pub(a if i % 2 else b, t, m)  # published on both instances
            assert st == 200
        results = [f.result() for f in subs]
    pids = set()
    for lines, headers in results:
        assert [d for _, d in lines] == msgs
        assert ids_increase([start] + [i for i, _ in lines])
        pids.add(headers["X-Pid"])
    assert len(pids) >= 2  # more than one worker (of two instances) delivered


def test_since_id_resumes_and_zero_reads_all(bus_spindle):
    a = bus_spindle(workers="1")
    t = topic()
    ids = []
    for i in range(10):
        st, i_d = pub(a, t, "v%d" % i)
        assert st == 200
        ids.append(i_d)
    assert ids_increase(ids)
    lines, _ = sub(a, t, ids[3], n=100, timeout_ms=300)
    assert [d for _, d in lines] == ["v%d" % i for i in range(4, 10)]
    assert [i for i, _ in lines] == ids[4:]
    lines, _ = sub(a, t, "0", n=100, timeout_ms=300)
    assert [d for _, d in lines] == ["v%d" % i for i in range(10)]
    # Without since: only new messages; none come, so the poll times out empty.
    lines, headers = sub(a, t, None, n=1, timeout_ms=200)
    assert lines == [] and headers["X-Bus-Last"] == ids[-1]


def test_redis_restart_publisher_errors_subscriber_loses_nothing(bus_spindle, redis):
    a, b = bus_spindle(), bus_spindle()
    t = topic()
    st, start = pub(a, t, "start")
    assert st == 200
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        waiting = ex.submit(sub, b, t, start, 6, 20000)
        time.sleep(0.3)
        for i in range(3):
            assert pub(a, t, "before%d" % i)[0] == 200
        time.sleep(0.3)
        redis.stop()
        st, err = pub(a, t, "lost")
        assert st == 503, err
        assert "publish failed" in err
        redis.start()
        for i in range(3):
            deadline = time.monotonic() + 5
            while True:  # the first publishes may race the reconnect
                st, _ = pub(a, t, "after%d" % i)
                if st == 200 or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert st == 200
        lines, headers = waiting.result()
    assert [d for _, d in lines] == ["before0", "before1", "before2", "after0", "after1", "after2"]
    assert int(headers["X-Bus-Down"]) >= 1  # told once that Redis went away
    assert "lost Redis at 127.0.0.1:%d" % redis.port in b.stderr()
    assert "is back" in b.stderr()


def test_redis_still_loading_after_a_restart_is_waited_for(bus_spindle, redis):
    """A restarted Redis answers LOADING until it has read its data set
    back: the reader waits for it (no "refused XREAD" error in the log) and
    its subscriber gets what is published once Redis has loaded."""
    srv = bus_spindle(workers="1")
    t = topic()
    st, start = pub(srv, t, "start")
    assert st == 200
    # Enough data that loading it back, 1 ms a key, takes about 3 s, with
    # clients answered (LOADING) every 1024 keys meanwhile.
    redis.command("EVAL", "for i=1,3000 do redis.call('SET', 'k'..i, 'x') end return 1", "0")
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        waiting = ex.submit(sub, srv, t, start, 1, 20000)
        time.sleep(0.3)
        redis.stop()
        redis.start(["--key-load-delay", "1000", "--loading-process-events-interval-bytes", "1024"],
                    ready=b"-LOADING")
        deadline = time.monotonic() + 10
        while redis.command("PING").startswith(b"-LOADING") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pub(srv, t, "after")[0] == 200
        lines, _ = waiting.result()
    assert [d for _, d in lines] == ["after"]
    err = srv.stderr()
    assert "lost Redis at 127.0.0.1:%d" % redis.port in err, err
    assert "refused XREAD" not in err, err


def test_slow_subscriber_is_cut_with_a_log_line(bus_spindle):
    a = bus_spindle("?queue=5", workers="1")
    t = topic()
    st, start = pub(a, t, "start")
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        slow = ex.submit(sub, a, t, start, 100, 5000, 300)
        fast = ex.submit(sub, a, t, start, 30, 5000)
        time.sleep(0.3)
        for i in range(30):
            assert pub(a, t, "x%d" % i)[0] == 200
        slow_lines, slow_headers = slow.result()
        fast_lines, fast_headers = fast.result()
    assert slow_headers["X-Bus-Cut"] == "1" and len(slow_lines) < 30
    assert fast_headers["X-Bus-Cut"] == "0"
    assert [d for _, d in fast_lines] == ["x%d" % i for i in range(30)]
    assert 'topic "%s" was cut for being slow' % t in a.stderr()


def test_a_burst_read_in_one_xread_is_not_a_slow_subscriber(bus_spindle):
    # queue=5; 30 messages are published on another instance while the
    # subscriber's worker is held, so its reader's next XREAD brings all 30
    # at once: a subscriber reading as fast as it can catches up (bus_fan_out
    # waits for its room) instead of being cut at the sixth.
    a, b = bus_spindle("?queue=5", workers="1"), bus_spindle("?queue=5", workers="1")
    t = topic()
    st, start = pub(a, t, "start")
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        held = ex.submit(sub, a, t, start, 30, 8000, 0, 1500)
        time.sleep(0.3)
        for i in range(30):
            assert pub(b, t, "b%d" % i)[0] == 200
        lines, h = held.result()
    assert h["X-Bus-Cut"] == "0", (len(lines), dict(h))
    assert [d for _, d in lines] == ["b%d" % i for i in range(30)]
    assert "was cut for being slow" not in a.stderr()


def test_message_size_limit(bus_spindle):
    a = bus_spindle("?max_message=1000", workers="1")
    assert pub(a, topic(), "x" * 1000)[0] == 200
    st, err = pub(a, topic(), "x" * 1001)
    assert st == 413 and "Message too long" in err


def test_topics_subscribed_while_the_reader_connects(bus_spindle):
    """The first subscribe starts the worker's reader, whose connect yields;
    subscribes to other topics meanwhile add topics its XREAD must hold
    (it counted them before the connect once, and wrote past its arrays:
    "Invalid stream ID", then the worker aborted)."""
    a = bus_spindle(workers="1")
    topics = [topic() for _ in range(12)]
    with concurrent.futures.ThreadPoolExecutor(len(topics)) as ex:
        polls = [ex.submit(sub, a, t, None, 1, 5000) for t in topics]
        time.sleep(0.5)
        for t in topics:
            assert pub(a, t, "for " + t)[0] == 200
        results = [f.result() for f in polls]
    assert [[d for _, d in lines] for lines, _ in results] == [["for " + t] for t in topics]
    err = a.stderr()
    assert "refused XREAD" not in err and "invalid" not in err.lower(), err[-2000:]
