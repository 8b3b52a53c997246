"""The memory bus across the workers of one machine (tests/fixtures/c/app_bus.c on
build/spindle, --bus memory --workers N, no Redis): long polls held by
every worker get every message, published on any worker, in order; history
and since-ids come from the shared ring on any worker, including one forked
after the messages (a worker killed with SIGKILL, its replacement reads
them); a worker recycled by --max-requests ends its subscribers, which
resume elsewhere with no gap; a worker whose loop stalls while the ring
laps it cuts its subscribers with a log line instead of skipping messages;
a slow subscriber is cut without slowing the others, while a burst that
reached a held worker at once is not a slow subscriber; the limits apply."""
import concurrent.futures
import os
import re
import signal
import time

from lib.opsutil import ops_spindle  # noqa: F401  (fixture: allows workers to die)
from test_bus_redis import APP, ids_increase, pub, sub, topic


def start(spindle, monkeypatch, *flags, workers="4", spec="memory"):
    monkeypatch.delenv("BUS_SPEC", raising=False)
    return spindle("--app", APP, "--workers", workers, "--bus", spec, *flags)


def test_every_worker_gets_every_message_in_order(spindle, monkeypatch):
    a = start(spindle, monkeypatch)
    t = topic()
    st, first = pub(a, t, "start")
    assert st == 200, first
    msgs = ["m%d" % i for i in range(10)]
    with concurrent.futures.ThreadPoolExecutor(24) as ex:
        subs = [ex.submit(sub, a, t, first, len(msgs), 10000) for _ in range(16)]
        time.sleep(0.5)  # every long poll subscribed
        began = time.monotonic()
        pubs = [ex.submit(pub, a, t, m) for m in msgs[:5]]  # some at once, on any worker
        assert all(f.result()[0] == 200 for f in pubs)
        for m in msgs[5:]:
            assert pub(a, t, m)[0] == 200
        results = [f.result() for f in subs]
        took = time.monotonic() - began
    # Woken at once, not by the readers' 5 s safety net.
    assert took < 3.0, took
    got = {tuple(d for _, d in lines) for lines, _ in results}
    assert len(got) == 1, got  # every subscriber saw the same sequence...
    seq = got.pop()
    assert sorted(seq) == sorted(msgs) and list(seq[5:]) == msgs[5:]  # ...all of it
    for lines, _ in results:
        assert ids_increase([first] + [i for i, _ in lines])
    pids = {h["X-Pid"] for _, h in results}
    assert len(pids) >= 2, pids  # held by several workers


def test_history_and_since_on_any_worker(spindle, monkeypatch):
    a = start(spindle, monkeypatch)
    t = topic()
    ids = []
    for i in range(12):
        st, i_d = pub(a, t, "v%d" % i)
        assert st == 200
        ids.append(i_d)
    assert ids_increase(ids)
    with concurrent.futures.ThreadPoolExecutor(24) as ex:  # at once: several workers answer
        since = [ex.submit(sub, a, t, ids[3], 100, 1000) for _ in range(16)]
        zero = [ex.submit(sub, a, t, "0", 100, 1000) for _ in range(8)]
        pids = set()
        for f in since:
            lines, h = f.result()
            assert [d for _, d in lines] == ["v%d" % i for i in range(4, 12)]
            assert [i for i, _ in lines] == ids[4:]
            pids.add(h["X-Pid"])
        for f in zero:
            lines, h = f.result()
            assert [d for _, d in lines] == ["v%d" % i for i in range(12)]
            pids.add(h["X-Pid"])
    assert len(pids) >= 2, pids
    lines, h = sub(a, t, None, n=1, timeout_ms=200)  # no since: only what comes next
    assert lines == [] and h["X-Bus-Last"] == ids[-1]


def test_a_worker_forked_later_reads_the_history(ops_spindle, monkeypatch):
    monkeypatch.delenv("BUS_SPEC", raising=False)
    a = ops_spindle("--app", APP, "--bus", "memory", workers=2, allow_worker_deaths=True)
    t = topic()
    ids = [pub(a, t, "h%d" % i)[1] for i in range(5)]
    old = sorted(a.workers_now())
    for pid in old:
        os.kill(pid, signal.SIGKILL)  # the master forks two new ones
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        new = a.workers_now()
        if len(new) == 2 and not set(new) & set(old):
            break
        time.sleep(0.05)
    assert len(a.workers_now()) == 2 and not set(a.workers_now()) & set(old)
    lines, h = sub(a, t, ids[0], n=100, timeout_ms=200)
    assert [d for _, d in lines] == ["h1", "h2", "h3", "h4"] and h["X-Pid"] not in map(str, old)
    st, i_d = pub(a, t, "after")
    assert st == 200 and ids_increase(ids + [i_d])  # ids keep increasing across the restart


def test_recycled_worker_ends_its_subscribers_who_resume_without_a_gap(ops_spindle, monkeypatch):
    monkeypatch.delenv("BUS_SPEC", raising=False)
    a = ops_spindle("--app", APP, "--bus", "memory", "--max-requests", "6", workers=2,
                    allow_worker_deaths=True)
    t = topic()
    st, last = pub(a, t, "start")
    sent, seen, ended_by_stop = [], [], 0
    for i in range(24):  # a worker recycles every second round or so
        with concurrent.futures.ThreadPoolExecutor(1) as ex:
            poll = ex.submit(sub, a, t, last, 2, 3000)
            time.sleep(0.05)
            for j in range(2):
                m = "r%d.%d" % (i, j)
                st, _ = pub(a, t, m)
                assert st == 200
                sent.append(m)
            lines, h = poll.result()
        seen += [d for _, d in lines]
        last = h["X-Bus-Last"]
        ended_by_stop += h["X-Bus-Stopping"] == "1"
    lines, _ = sub(a, t, last, n=1000, timeout_ms=200)  # whatever the last poll did not get
    seen += [d for _, d in lines]
    assert seen == sent
    assert ended_by_stop >= 1  # some polls were held by a worker that recycled
    assert len(re.findall(r"worker \d+ recycled after", a.stderr())) >= 3


def test_a_stalled_worker_lapped_by_the_ring_cuts_its_subscribers(spindle, monkeypatch):
    # A ring of 4 x 4 KiB: 60 messages of 1 KB lap it while one worker's loop is held.
    a = start(spindle, monkeypatch, workers="2", spec="memory?retain_bytes=4096&max_message=1024")
    t = topic()
    st, first = pub(a, t, "start")
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        held = ex.submit(sub, a, t, first, 1000, 3000, 0, 1500)
        time.sleep(0.3)
        for i in range(60):  # served by the other worker while that one is held
            assert pub(a, t, "%02d" % i + "x" * 1000)[0] == 200
        lines, h = held.result()
    assert h["X-Bus-Cut"] == "1", (len(lines), dict(h))
    assert "fell a whole shared ring" in a.stderr()


def test_a_burst_that_landed_while_the_worker_was_held_is_not_a_slow_subscriber(
        spindle, monkeypatch):
    # queue=5, and 30 messages land while the subscriber's worker is held:
    # its reader then finds all 30 at once. A subscriber that reads as fast
    # as it can is given the room to catch up (bus_fan_out), not cut as a
    # slow one; it gets every message in order (before: cut at the sixth).
    a = start(spindle, monkeypatch, workers="2", spec="memory?queue=5")
    t = topic()
    st, first = pub(a, t, "start")
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        held = ex.submit(sub, a, t, first, 30, 8000, 0, 1500)
        time.sleep(0.3)
        for i in range(30):  # served by the other worker while that one is held
            assert pub(a, t, "b%d" % i)[0] == 200
        lines, h = held.result()
    assert h["X-Bus-Cut"] == "0", (len(lines), dict(h))
    assert [d for _, d in lines] == ["b%d" % i for i in range(30)]
    assert "was cut for being slow" not in a.stderr()


def test_slow_subscriber_is_cut_and_the_others_get_everything(spindle, monkeypatch):
    a = start(spindle, monkeypatch, workers="2", spec="memory?queue=5")
    t = topic()
    st, first = pub(a, t, "start")
    with concurrent.futures.ThreadPoolExecutor(3) as ex:
        slow = ex.submit(sub, a, t, first, 100, 5000, 300)
        fast = [ex.submit(sub, a, t, first, 30, 5000) for _ in range(2)]
        time.sleep(0.3)
        for i in range(30):
            assert pub(a, t, "x%d" % i)[0] == 200
        slow_lines, slow_h = slow.result()
        results = [f.result() for f in fast]
    assert slow_h["X-Bus-Cut"] == "1" and len(slow_lines) < 30
    for lines, h in results:
        assert h["X-Bus-Cut"] == "0" and [d for _, d in lines] == ["x%d" % i for i in range(30)]
    assert 'topic "%s" was cut for being slow' % t in a.stderr()


def test_limits_and_a_big_message(spindle, monkeypatch):
    a = start(spindle, monkeypatch, workers="2")
    t = topic()
    st, first = pub(a, t, "start")
    big = "B" * (1 << 20)  # the default max_message: taken, and delivered whole
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        poll = ex.submit(sub, a, t, first, 1, 5000)
        time.sleep(0.2)
        assert pub(a, t, big)[0] == 200
        lines, _ = poll.result()
    assert lines and lines[0][1] == big
    st, err = pub(a, t, big + "!")
    assert st == 413 and "Message too long" in err


def test_concurrent_publishers_wrap_the_ring_and_everyone_agrees(spindle, monkeypatch):
    """4 publishers on their own keep-alive connections (so several workers
    append at once) write 600 messages through a 256 KiB ring, more than
    once around it; 20 subscribers on several workers see the same order,
    every message once, and each publisher's messages in its own order."""
    import http.client
    a = start(spindle, monkeypatch, spec="memory?retain_bytes=65536")
    t = topic()
    st, first = pub(a, t, "start")

    def publisher(k):
        c = http.client.HTTPConnection("127.0.0.1", a.port, timeout=10)
        for i in range(150):
            c.request("POST", "/pub?topic=" + t, body=("p%d.%03d " % (k, i)) + "x" * 100)
            r = c.getresponse()
            r.read()
            assert r.status == 200
        c.close()
    with concurrent.futures.ThreadPoolExecutor(24) as ex:
        subs = [ex.submit(sub, a, t, first, 600, 15000) for _ in range(20)]
        time.sleep(0.5)
        pubs = [ex.submit(publisher, k) for k in range(4)]
        for f in pubs:
            f.result()
        results = [f.result() for f in subs]
    seqs = {tuple(d.split(" ")[0] for _, d in lines) for lines, _ in results}
    assert len(seqs) == 1, [len(s) for s in seqs]
    seq = seqs.pop()
    assert len(seq) == 600 and len(set(seq)) == 600
    for k in range(4):
        mine = [m for m in seq if m.startswith("p%d." % k)]
        assert mine == ["p%d.%03d" % (k, i) for i in range(150)]
    assert all(h["X-Bus-Cut"] == "0" for _, h in results)
    assert len({h["X-Pid"] for _, h in results}) >= 2
