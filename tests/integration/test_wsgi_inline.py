"""The hub runs a WSGI call on its own greenlet when no other call runs on
it (python/_spindle/common/hub.c, run_inline) and drives the loop from inside
that call's waits: calls waiting together each have a greenlet of their
own and overlap; quick requests are served while such a call waits; a
failure after a wait is a 500 and the next request is served; a stop with
such a call still waiting ends within --graceful-timeout; a greenlet the
app makes and waits in drives the loop meanwhile and returns its result
(tests/fixtures/wsgi/inline_app.py)."""
import json
import threading
import time

import pytest

from lib.wsgiutil import WsgiServer


@pytest.fixture
def srv(tmp_path):
    s = WsgiServer("inline_app:application", logdir=tmp_path, expect_tracebacks=True)
    s.start()
    yield s
    s.stop()
    assert not s.problems(), s.problems()


def get(s, path, timeout=10):
    with s.connect(timeout=timeout) as c:
        c.request("GET", path)
        r = c.response()
    return r.status, (json.loads(r.body) if r.status == 200 else r.body)


def test_calls_waiting_together_overlap_each_in_its_own_greenlet(srv):
    out = []
    threads = [threading.Thread(target=lambda: out.append(get(srv, "/who?s=0.5"))) for _ in range(3)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    took = time.monotonic() - t0
    assert len(out) == 3 and all(st == 200 for st, _ in out), out
    assert len({b["g"] for _, b in out}) == 3, out  # one greenlet each while they overlap
    assert all(b["same_after_wait"] and b["in_request"] for _, b in out), out
    assert took < 1.2, took  # they waited together, not one after another


def test_a_wait_in_the_apps_own_greenlet_returns_through_switch(srv):
    out = []
    threads = [threading.Thread(target=lambda: out.append(get(srv, "/raw?s=0.4"))) for _ in range(3)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(0.1)
    st, body = get(srv, "/who")  # served while they wait
    assert st == 200 and time.monotonic() - t0 < 0.4, body
    for t in threads:
        t.join(10)
    assert out == [(200, {"got": "slept in my greenlet", "same_after_wait": True})] * 3, out
    assert time.monotonic() - t0 < 1.0


def test_quick_requests_are_served_while_a_call_waits(srv):
    slow = threading.Thread(target=lambda: get(srv, "/who?s=1.5"))
    slow.start()
    time.sleep(0.2)  # the slow call is waiting (on the hub, the only call then)
    for _ in range(20):
        t0 = time.monotonic()
        st, body = get(srv, "/who")
        assert st == 200 and body["in_request"], body
        assert time.monotonic() - t0 < 0.5
    slow.join(10)


def test_a_failure_after_a_wait_is_a_500_and_the_worker_goes_on(srv):
    assert get(srv, "/fail?s=0.05")[0] == 500
    st, body = get(srv, "/who?s=0.01")
    assert st == 200 and body["same_after_wait"], body
    assert "failing after a wait" in srv.stderr()


def test_a_stop_while_a_call_waits_ends_within_the_graceful_timeout(srv):
    slow = threading.Thread(target=lambda: pytest.raises(Exception, get, srv, "/who?s=30"))
    slow.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    srv.stop(timeout=10)
    assert time.monotonic() - t0 < 6  # --graceful-timeout 3
    slow.join(10)
