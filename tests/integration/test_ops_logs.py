"""Logs (issue 19): header atoms (%{Name}i request, %{Name}o response) and
the request time in ms (%M) with the real binary; --access-log-format json
lines that json.loads reads whatever the client sent; --error-log FILE with
the start-up lines and the workers' lines, reopened on USR1 after logrotate
moved it (the access log too); a WSGI traceback landing in the error log.
"""
import datetime
import json
import os
import signal
import time

from lib.client import Conn

from lib.opsutil import ops_spindle, run_spindle, wait_for  # noqa: F401
from lib.wsgiutil import WsgiServer


def _lines(path):
    try:
        return [ln for ln in path.read_bytes().split(b"\n") if ln]
    except OSError:
        return []


def _raw(srv, data):
    with Conn(srv.addr) as c:
        c.send(data)
        return c.read_response()


def _text(path):
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def test_header_atoms_and_ms(ops_spindle, tmp_path):
    log = tmp_path / "access.log"
    fmt = "%U|%{User-Agent}i|%{x-trace-id}i|%{content-type}o|%{X-None}o|%M|%D|%m|%q|%H|%B"
    srv = ops_spindle("--access-log", str(log), "--access-log-format", fmt, workers=1)
    r = _raw(srv, b"GET /sleep?ms=60 HTTP/1.1\r\nHost: x\r\nuser-agent: probe/1 \"q\"\r\n"
                  b"X-Trace-ID: t-42\r\nConnection: close\r\n\r\n")
    assert r.status == 200
    r = _raw(srv, b"POST /echo HTTP/1.0\r\nContent-Type: application/x-spindle-test\r\n"
                  b"Content-Length: 2\r\n\r\nhi")
    assert r.status == 200 and r.body == b"hi"
    lines = wait_for(lambda: (lambda ls: ls if len(ls) >= 2 else None)(
        [ln.decode() for ln in _lines(log) if not ln.startswith(b"/|")]), 3)
    assert lines and len(lines) == 2, _lines(log)
    a, b = (ln.split("|") for ln in lines)
    assert a[:5] == ["/sleep", r"probe/1 \x22q\x22", "t-42", "text/plain", "-"], a
    ms, us = int(a[5]), int(a[6])
    assert 60 <= ms < 5000 and ms == us // 1000, a
    assert a[7:] == ["GET", "ms=60", "HTTP/1.1", a[10]] and int(a[10]) > 0, a
    # The response's Content-Type is the one the handler set (echo copies it).
    assert b[:5] == ["/echo", "-", "-", "application/x-spindle-test", "-"], b
    assert b[7:] == ["POST", "-", "HTTP/1.0", "2"], b


def test_bad_header_atom_refused_at_start(tmp_path):
    r = run_spindle(["--access-log", str(tmp_path / "a"), "--access-log-format", "%{Host}x",
                     "--bind", "127.0.0.1:1"])
    assert r.returncode != 0 and "%{Name}i" in r.stderr, r.stderr


HOSTILE_UA = b'a"b\\c\td\xff\xfe caf\xc3\xa9 "}\n'.rstrip(b"\n") + b' {"status":1}'


def test_json_lines(ops_spindle, tmp_path):
    log = tmp_path / "access.log"
    srv = ops_spindle("--access-log", str(log), "--access-log-format", "json", workers=1)
    workers = srv.workers_now()
    r = _raw(srv, b"GET /sleep?ms=1 HTTP/1.1\r\nHost: x\r\nUser-Agent: " + HOSTILE_UA +
                  b"\r\nReferer: http://r/\\\"\r\nConnection: close\r\n\r\n")
    assert r.status == 200
    body_len = len(r.body)
    # A control character the parser refuses: a 400, still a JSON line.
    r = _raw(srv, b"GET /x HTTP/1.1\r\nHost: x\r\nUser-Agent: a\x01b\r\n\r\n")
    assert r.status == 400
    lines = wait_for(lambda: (lambda ls: ls if len(ls) >= 3 else None)(_lines(log)), 3)
    assert lines and len(lines) == 3, _lines(log)
    objs = [json.loads(ln) for ln in lines]  # each line alone is valid JSON
    keys = ["client", "time", "method", "target", "protocol", "status", "bytes", "referer",
            "user_agent", "duration_us", "pid"]
    assert all(list(o) == keys for o in objs), objs
    probe, ok, bad = objs
    assert ok["client"] == "127.0.0.1" and ok["method"] == "GET"
    assert ok["target"] == "/sleep?ms=1" and ok["protocol"] == "HTTP/1.1"
    assert ok["status"] == 200 and ok["bytes"] == body_len > 0, (ok, body_len)
    assert ok["referer"] == 'http://r/\\"'
    # Valid UTF-8 kept; bytes outside it as \u00XX (read back as Latin-1).
    assert ok["user_agent"] == 'a"b\\c\td\xff\xfe caf\xe9 "} {"status":1}', ok["user_agent"]
    assert ok["duration_us"] >= 1000 and ok["pid"] in workers, ok
    t = datetime.datetime.strptime(ok["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
    assert abs(t.replace(tzinfo=datetime.timezone.utc).timestamp() - time.time()) < 60, ok
    assert bad["status"] == 400 and bad["user_agent"] is None, bad


def test_error_log_file_and_usr1_reopen(ops_spindle, tmp_path):
    elog, alog = tmp_path / "error.log", tmp_path / "access.log"
    srv = ops_spindle("--error-log", str(elog), "--access-log", str(alog), "--max-requests", "6",
                      workers=1)
    assert wait_for(lambda: "started 1 worker(s)" in _text(elog), 3), _text(elog)
    assert "listening on 127.0.0.1:%d" % srv.port in _text(elog)
    assert "listening on" not in srv.stderr()  # all in the file
    (w,) = srv.workers_now()
    # logrotate: move both files, then USR1 to the master.
    os.rename(elog, str(elog) + ".1")
    os.rename(alog, str(alog) + ".1")
    srv.signal(signal.SIGUSR1)
    assert wait_for(lambda: "USR1: reopening the logs" in _text(elog), 3), _text(elog)
    time.sleep(0.3)  # the worker reads the forwarded USR1 on its loop
    for _ in range(10):  # the worker logs when --max-requests is reached
        if "[%d] info: served 6 requests" % w in _text(elog):
            break
        try:
            _raw(srv, b"GET /sleep?ms=0 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        except OSError:
            pass
        time.sleep(0.05)
    assert wait_for(lambda: "[%d] info: served 6 requests" % w in _text(elog), 3), _text(elog)
    assert "served 6" not in _text(tmp_path / "error.log.1")
    assert wait_for(lambda: b"/sleep?ms=0" in b"".join(_lines(alog)), 3), _lines(alog)
    assert b"/sleep" not in b"".join(_lines(tmp_path / "access.log.1"))


def test_error_log_unwritable_fails_at_start(tmp_path):
    r = run_spindle(["--error-log", str(tmp_path / "no" / "such" / "dir.log"),
                     "--bind", "127.0.0.1:1"])
    assert r.returncode == 1 and "--error-log" in r.stderr and "No such file" in r.stderr, r.stderr


def test_wsgi_traceback_in_error_log(tmp_path):
    elog = tmp_path / "error.log"
    s = WsgiServer("errors_app:application", args=["--error-log", str(elog)], logdir=tmp_path,
                   expect_tracebacks=True)
    s.start()
    try:
        assert s.get("/raises").status == 500
        assert wait_for(lambda: "ZeroDivisionError: app-bug-in-raises" in _text(elog), 3), \
            _text(elog)
        assert "Traceback" in _text(elog) and "errors_app.py" in _text(elog)
        assert "Traceback" not in s.stderr()
        # Rotated: the worker's next traceback goes to the new file.
        os.rename(elog, str(elog) + ".1")
        os.kill(s.pid, signal.SIGUSR1)
        assert wait_for(lambda: "USR1: reopening the logs" in _text(elog), 3), _text(elog)
        time.sleep(0.3)
        assert s.get("/raises_after_start").status == 500
        assert wait_for(lambda: "KeyError: 'app-bug-after-start'" in _text(elog), 3), _text(elog)
        assert "KeyError" not in _text(tmp_path / "error.log.1")
    finally:
        assert s.stop() == 0
