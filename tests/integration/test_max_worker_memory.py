"""--max-worker-memory SIZE: a worker whose RSS passes SIZE finishes what it
serves and is replaced (uWSGI's reload-on-rss): the worker says its RSS and
the limit, the master logs it as recycled, a new pid serves, and no request
fails on the way."""
import time

from lib.wsgiutil import BAD_MARKS, WsgiServer

APP = '''
import os
HOARD = []

def application(environ, start_response):
    if environ["PATH_INFO"] == "/grow":
        HOARD.append(b"x" * (50 << 20))  # written, so resident: 50 MiB kept
    body = str(os.getpid()).encode()
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]
'''


def test_a_worker_past_the_limit_is_recycled_and_the_server_keeps_answering(tmp_path):
    (tmp_path / "hoard_app.py").write_text(APP)
    # Not the wsgi_server fixture: its teardown counts the recycling's
    # "starting a new one" as a worker that died; the other marks are checked below.
    s = WsgiServer("hoard_app:application", ["--max-worker-memory", "40m"], chdir=tmp_path,
                   logdir=tmp_path).start()
    try:
        recycle(s)
    finally:
        assert s.stop() == 0
    err = s.stderr()
    assert [m for m in BAD_MARKS if m in err] == ["starting a new one"], err


def recycle(s):
    first = s.get("/").body
    time.sleep(1.3)  # a few checks below the limit: no recycling
    assert s.get("/").body == first
    r = s.get("/grow")
    assert r.status == 200 and r.body == first, r
    end = time.monotonic() + 8
    pid = first
    while pid == first and time.monotonic() < end:
        time.sleep(0.1)
        r = s.get("/")
        assert r.status == 200, r  # the old worker or the new one: never an error
        pid = r.body
    assert pid != first, s.stderr()
    err = s.stderr()
    assert "worker %s uses" % first.decode() in err, err
    assert "past --max-worker-memory 40.0 MiB; recycling it gracefully" in err, err
    assert "worker %s recycled after" % first.decode() in err, err
    assert s.get("/").body == pid  # the new worker stays: it is below the limit
