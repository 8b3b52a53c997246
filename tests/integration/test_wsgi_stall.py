"""A stalled worker explains itself (issue 19): before the watchdog kills a
worker whose loop a blocking call holds (--worker-timeout), the worker dumps
the Python traceback of that call, with the request line and how to move
such a call off the loop; then it is replaced."""
import re
import socket
import time

from lib.wsgiutil import WsgiServer, wait_for


def test_stalled_worker_dumps_its_traceback_then_is_replaced(tmp_path):
    # Not the wsgi_server fixture: a replaced worker is what this test wants.
    srv = WsgiServer("stall_app:application", ["--worker-timeout", "1"], logdir=tmp_path).start()
    try:
        check_dump_then_kill(srv)
    finally:
        assert srv.stop() == 0, srv.stderr()


def stall(srv, path):
    """Stalls the worker with path; returns its pid once it is replaced."""
    (victim,) = srv.worker_pids()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=6)
    try:
        s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path.encode())
        assert wait_for(lambda: victim not in srv.worker_pids() and srv.worker_pids(), 6), \
            srv.stderr()
        try:
            assert s.recv(100) == b""  # killed: never answered
        except ConnectionResetError:
            pass
    finally:
        s.close()
    return victim


def check_dump_then_kill(srv):
    victim = stall(srv, "/block")
    err = srv.stderr()
    assert re.search(r"worker %d: its loop has not turned for \d+ ms, blocked serving "
                     r"'GET /block'" % victim, err), err
    assert "spindle.patch()" in err and "sp_run_blocking" in err, err
    # faulthandler's dump, naming the app's file and the blocking function.
    assert "Stack (most recent call first)" in err, err
    assert re.search(r'File ".*stall_app\.py", line \d+ in block_the_loop', err), err
    assert re.search(r'File ".*stall_app\.py", line \d+ in application', err), err
    # The dump came before the kill, and the new worker serves.
    assert err.index("in block_the_loop") < err.index("worker %d was killed by signal 9" % victim)
    assert srv.get("/").status == 200
    # A busy loop in pure Python is caught the same way.
    victim = stall(srv, "/spin")
    err = srv.stderr()
    assert "worker %d: its loop has not turned" % victim in err, err
    assert "blocked serving 'GET /spin'" in err, err
    assert re.search(r'File ".*stall_app\.py", line \d+ in spin_the_loop', err), err
    assert srv.get("/").status == 200


def test_stalled_worker_logs_the_path_not_the_query(tmp_path):
    """A query often carries a token: the watchdog's line and the reaper's
    name the path only, unless --log-query (a C worker's own dump reads the
    same slot: test_workers.py)."""
    for flags, shown in (([], "GET /block"), (["--log-query"], "GET /block?token=s3cret")):
        srv = WsgiServer("stall_app:application", ["--worker-timeout", "1"] + flags,
                         logdir=tmp_path).start()
        try:
            victim = stall(srv, "/block?token=s3cret")
            err = srv.stderr()
            assert "blocked serving '%s'" % shown in err, err
            assert re.search(r"worker %d was killed by signal 9 .*'%s'" % (victim, re.escape(shown)),
                             err), err
            if not flags:
                assert "s3cret" not in err, err
        finally:
            assert srv.stop() == 0, srv.stderr()
