"""The access log (issue 7, "Logs and stats"): combined format by default,
custom formats (%D, %p, ...), buffered but at most about a second behind and
flushed at exit, reopened on USR1 after logrotate moved the file, client text
escaped, bad format letters refused at start.
"""
import datetime
import os
import re
import signal
import time

from lib.client import Conn

from lib.opsutil import http_get, ops_spindle, run_spindle, wait_for  # noqa: F401

COMBINED = re.compile(
    r'^(?P<h>\S+) - - \[(?P<t>\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4})\] '
    r'"(?P<r>[^"]*)" (?P<s>\d{3}) (?P<b>\d+|-) "(?P<f>[^"]*)" "(?P<a>[^"]*)"$')


def _lines(path):
    try:
        return [ln for ln in path.read_text(errors="replace").split("\n") if ln]
    except OSError:
        return []


def _mine(path, skip="GET / HTTP/1.1"):
    """The log's lines, without the readiness probes' (GET /)."""
    return [ln for ln in _lines(path) if skip not in ln]


def _wait_lines(path, n, timeout, skip="GET / HTTP/1.1"):
    """Until path has n lines besides the readiness probes'; returns them."""
    return wait_for(lambda: (lambda ls: ls if len(ls) >= n else None)(_mine(path, skip)), timeout) \
        or _mine(path, skip)


def _raw(srv, data):
    with Conn(srv.addr) as c:
        c.send(data)
        return c.read_response()


def test_combined_format_fields(ops_spindle, tmp_path):
    log = tmp_path / "access.log"
    srv = ops_spindle("--access-log", str(log), workers=1)
    r = _raw(srv, b'GET /?a=1 HTTP/1.1\r\nHost: x\r\nUser-Agent: curl/8 "quoted" \\ x\r\n'
                  b'Referer: http://ref.example/page\r\nConnection: close\r\n\r\n')
    assert r.status == 200 and r.body == b"Hello world!"
    r = _raw(srv, b"GET /no-such-page HTTP/1.0\r\n\r\n")
    assert r.status == 404
    body404 = len(r.body)
    r = _raw(srv, b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
    assert r.status == 200 and r.body == b"hello"
    lines = _wait_lines(log, 3, 3)
    assert len(lines) == 3, lines
    parsed = []
    for ln in lines:
        m = COMBINED.match(ln)
        assert m, "not the combined log format: %r" % ln
        parsed.append(m.groupdict())
    a, b, c = parsed
    assert a["h"] == "127.0.0.1"
    assert a["r"] == "GET /?a=1 HTTP/1.1", a
    assert (a["s"], a["b"]) == ("200", "12"), a
    assert a["f"] == "http://ref.example/page"
    # The client's quotes (and backslash) cannot end the field: escaped as \xHH.
    assert a["a"] == r"curl/8 \x22quoted\x22 \x5c x", a["a"]
    assert b["r"] == "GET /no-such-page HTTP/1.0" and b["s"] == "404", b
    assert b["b"] == (str(body404) if body404 else "-"), (b, body404)
    assert b["f"] == "-" and b["a"] == "-", b
    assert c["r"] == "POST /echo HTTP/1.1" and (c["s"], c["b"]) == ("200", "5"), c
    # The time is now, give or take.
    t = datetime.datetime.strptime(a["t"], "%d/%b/%Y:%H:%M:%S %z")
    assert abs(t.timestamp() - time.time()) < 60, a["t"]


def test_control_characters_and_forged_lines_are_escaped(ops_spindle, tmp_path):
    log = tmp_path / "access.log"
    srv = ops_spindle("--access-log", str(log), workers=1)
    # Obs-text and a tab in the user agent; a request target with a quote.
    r = _raw(srv, b'GET /x"y HTTP/1.1\r\nHost: x\r\nUser-Agent: a\tb\xffc\r\nConnection: close\r\n\r\n')
    lines = _wait_lines(log, 1, 3)
    assert len(lines) == 1, lines
    ln = lines[0]
    assert "\t" not in ln and "\xff" not in ln and "\ufffd" not in ln, repr(ln)
    assert r'"a\x09b\xffc"' in ln, ln
    assert '/x\\x22y' in ln and COMBINED.match(ln), (r.status, ln)


def test_custom_format_with_duration_and_pid(ops_spindle, tmp_path):
    log = tmp_path / "access.log"
    srv = ops_spindle("--access-log", str(log), "--access-log-format", "%p %D %s %b [%r] 100%%",
                      workers=2)
    r = http_get(srv.addr, "/sleep?ms=120")
    assert r.status == 200
    lines = _wait_lines(log, 1, 3)
    assert len(lines) == 1, lines
    m = re.match(r"^(\d+) (\d+) 200 (\d+|-) \[GET /sleep\?ms=120 HTTP/1.1\] 100%$", lines[0])
    assert m, lines[0]
    assert int(m.group(1)) in srv.workers_now(), (m.group(1), srv.workers_now())
    us = int(m.group(2))
    assert 120000 <= us < 3000000, "%%D is the request time in microseconds: %d for a 120 ms request" % us


def test_lines_appear_within_a_second_or_so(ops_spindle, tmp_path):
    log = tmp_path / "access.log"
    srv = ops_spindle("--access-log", str(log), workers=2)
    for i in range(5):
        assert http_get(srv.addr, "/?soon=%d" % i).status == 200
    t0 = time.monotonic()
    lines = _wait_lines(log, 5, 3)
    took = time.monotonic() - t0
    assert len(lines) == 5, lines
    assert took < 1.5, "the buffered access log was %.2f s behind (at most ~1 s)" % took


def test_lines_flushed_at_exit(ops_spindle, tmp_path):
    log = tmp_path / "access.log"
    srv = ops_spindle("--access-log", str(log), "--access-log-format", "%r %s", workers=1)
    for i in range(20):
        assert http_get(srv.addr, "/?n=%d" % i).status == 200
    srv.signal(signal.SIGTERM)  # at once, before the once-a-second flush
    assert srv.wait_exit(6) == 0, srv.stderr()
    lines = _lines(log)
    for i in range(20):
        assert "GET /?n=%d HTTP/1.1 200" % i in lines, (i, lines)


def test_usr1_reopens_after_rotation(ops_spindle, tmp_path):
    log = tmp_path / "access.log"
    rotated = tmp_path / "access.log.1"
    srv = ops_spindle("--access-log", str(log), "--access-log-format", "%r %p", workers=2)
    workers = srv.workers_now()
    for i in range(6):
        assert http_get(srv.addr, "/?before=%d" % i).status == 200
    assert len(_wait_lines(log, 6, 3, skip="GET / ")) == 6
    os.rename(log, rotated)
    srv.signal(signal.SIGUSR1)

    def reopened():
        # Every worker's log fd names the fresh file, none the rotated one.
        for w in workers:
            targets = set()
            for fd in os.listdir("/proc/%d/fd" % w):
                try:
                    targets.add(os.readlink("/proc/%d/fd/%s" % (w, fd)))
                except OSError:
                    pass
            if str(rotated) in targets or str(log) not in targets:
                return False
        return True

    assert wait_for(reopened, 3), "the workers did not reopen %s after USR1" % log
    for i in range(6):
        assert http_get(srv.addr, "/?after=%d" % i).status == 200
    new_lines = _wait_lines(log, 6, 3, skip="GET / ")
    assert sorted(ln.split()[1] for ln in new_lines) == ["/?after=%d" % i for i in range(6)], new_lines
    old_lines = _lines(rotated)
    assert not [ln for ln in old_lines if "after" in ln], old_lines
    assert len([ln for ln in old_lines if "before" in ln]) == 6
    assert srv.workers_now() == workers, "USR1 must not restart the workers"


def test_access_log_to_stdout(ops_spindle):
    srv = ops_spindle("--access-log", "-", "--access-log-format", "%s %r", workers=1)
    assert http_get(srv.addr, "/stdout-check").status == 404
    assert wait_for(lambda: "404 GET /stdout-check HTTP/1.1" in srv.stdout(), 3), srv.stdout()
    srv.signal(signal.SIGUSR1)  # nothing to reopen: still logs
    time.sleep(0.2)
    assert http_get(srv.addr, "/stdout-2").status == 404
    assert wait_for(lambda: "404 GET /stdout-2 HTTP/1.1" in srv.stdout(), 3), srv.stdout()


def test_bad_format_letter_fails_at_start(tmp_path):
    r = run_spindle(["--bind", "127.0.0.1:1", "--access-log", str(tmp_path / "a.log"),
                     "--access-log-format", "%h %Z %s"])
    assert r.returncode == 2, r
    assert "%Z" in r.stderr and "access-log-format" in r.stderr, r.stderr
    r = run_spindle(["--bind", "127.0.0.1:1", "--access-log-format", "%h %"])
    assert r.returncode == 2, r
    assert "access-log-format" in r.stderr, r.stderr


def test_unwritable_access_log_fails_at_start(ops_spindle, tmp_path):
    srv = ops_spindle("--access-log", str(tmp_path / "no-dir" / "a.log"), workers=1, ready=False)
    code = srv.wait_exit(6)
    assert code not in (None, 0), srv.stderr()
    assert "no-dir/a.log" in srv.stderr(), srv.stderr()
