"""systemd integration (issue 7): socket activation through a launcher that
passes LISTEN_FDS (socket_launcher.py), and sd_notify readiness messages
received on a test datagram socket.
"""
import os
import signal
import tempfile
import time
import uuid

import pytest

from lib.opsutil import (LAUNCHER, PYTHON, Notify, free_port, http_get, listening_inodes, ops_spindle,  # noqa: F401
                     tcp_listen_ports, wait_for)


@pytest.fixture
def ops_notify():
    """A NOTIFY_SOCKET on a short filesystem path (sun_path is 108 bytes)."""
    d = tempfile.mkdtemp(prefix="spn-", dir="/tmp")
    n = Notify(d + "/notify")
    yield n
    n.close()
    os.rmdir(d)


def _activated(ops_spindle, *flags, env=None, workers=2):
    """spindle started by the launcher on a free port, with no --bind."""
    for attempt in range(3):
        port = free_port()
        srv = ops_spindle(*flags, workers=workers, env=env, bind=False, port=port, ready=False,
                          argv_prefix=[PYTHON, LAUNCHER, "127.0.0.1:%d" % port])
        try:
            srv.wait_ready()
            return srv
        except RuntimeError:
            if attempt == 2 or "in use" not in srv.stderr():
                raise


def test_socket_activation_serves_the_passed_socket(ops_spindle, ops_notify):
    srv = _activated(ops_spindle, env={"NOTIFY_SOCKET": ops_notify.path})
    port = srv.port
    # exec kept the launcher's pid: LISTEN_PID named the server itself.
    with open("/proc/%d/cmdline" % srv.pid, "rb") as f:
        assert f.read().split(b"\0")[0].endswith(b"spindle")
    err = srv.stderr()
    assert "serving 1 socket(s) passed by systemd" in err, err
    assert "127.0.0.1:8080" not in err, err
    # It listens on exactly the passed socket (fd 3), nothing else: no default 127.0.0.1:8080.
    assert tcp_listen_ports(srv.pid) == {port}, tcp_listen_ports(srv.pid)
    inode = os.readlink("/proc/%d/fd/3" % srv.pid)
    assert listening_inodes(srv.pid, port) == {int(inode[8:-1])}, (inode, listening_inodes(srv.pid))
    for w in srv.workers_now():
        assert tcp_listen_ports(w) <= {port}, tcp_listen_ports(w)
    for _ in range(10):
        r = http_get(srv.addr, "/")
        assert r.status == 200 and r.body == b"Hello world!"
    # Readiness names the server's own pid.
    assert ops_notify.wait_for(lambda m: m == "MAINPID=%d\nREADY=1" % srv.pid, 3) is not None, \
        ops_notify.messages
    # A reload keeps serving the passed socket (nothing is re-bound).
    old = srv.workers_now()
    srv.signal(signal.SIGHUP)
    assert wait_for(lambda: len(srv.workers_now() - old) == 2, 5), srv.stderr()
    assert http_get(srv.addr, "/").status == 200
    assert tcp_listen_ports(srv.pid) == {port}
    srv.signal(signal.SIGTERM)
    assert srv.wait_exit(6) == 0, srv.stderr()


def test_socket_activation_with_workers_0(ops_spindle):
    srv = _activated(ops_spindle, workers=0)
    assert "serving 1 socket(s) passed by systemd" in srv.stderr()
    assert tcp_listen_ports(srv.pid) == {srv.port}
    assert http_get(srv.addr, "/").status == 200


def test_listen_pid_of_another_process_is_ignored(ops_spindle, tmp_path):
    """LISTEN_FDS meant for another pid (e.g. inherited through a shell) must not
    be taken: spindle binds its --bind address and serves only that."""
    srv = ops_spindle(workers=1, env={"LISTEN_PID": "1", "LISTEN_FDS": "1"})
    assert "passed by systemd" not in srv.stderr()
    assert tcp_listen_ports(srv.pid) == {srv.port}
    assert http_get(srv.addr, "/").status == 200


def test_sd_notify_ready_reloading_stopping(ops_spindle):
    # The abstract namespace ('@' prefix), as systemd itself uses.
    notify = Notify("@spindle-test-%s" % uuid.uuid4().hex)
    try:
        srv = ops_spindle(workers=2, env={"NOTIFY_SOCKET": notify.path})
        i = notify.wait_for(lambda m: "READY=1" in m, 5)
        assert i is not None, "no READY=1:\n%s\n%s" % (notify.messages, srv.stderr())
        assert notify.messages[i] == "MAINPID=%d\nREADY=1" % srv.pid, notify.messages
        # READY comes once the workers run, not before.
        assert len(srv.workers_now()) == 2
        assert not any("STOPPING" in m or "RELOADING" in m for m in notify.messages), notify.messages

        n = len(notify.messages)
        srv.signal(signal.SIGHUP)
        r = notify.wait_for(lambda m: "RELOADING=1" in m, 5, since=n)
        assert r is not None, "no RELOADING=1 after HUP: %s" % notify.messages
        rd = notify.wait_for(lambda m: "READY=1" in m, 5, since=r + 1)
        assert rd is not None, "no READY=1 after RELOADING=1: %s" % notify.messages
        assert not any("STOPPING" in m for m in notify.messages), notify.messages
        assert http_get(srv.addr, "/").status == 200

        n = len(notify.messages)
        srv.signal(signal.SIGTERM)
        s = notify.wait_for(lambda m: "STOPPING=1" in m, 5, since=n)
        assert s is not None, "no STOPPING=1 after TERM: %s" % notify.messages
        assert srv.wait_exit(6) == 0, srv.stderr()
        notify.drain(0.2)
        assert not any("READY=1" in m for m in notify.messages[s:]), notify.messages
    finally:
        notify.close()


def test_sd_notify_unset_or_unreachable_is_harmless(ops_spindle, tmp_path):
    # A NOTIFY_SOCKET nobody listens on: spindle must start and serve all the same.
    srv = ops_spindle(workers=1, env={"NOTIFY_SOCKET": str(tmp_path / "nobody-here")})
    assert http_get(srv.addr, "/").status == 200
    srv.signal(signal.SIGHUP)
    time.sleep(0.3)
    assert http_get(srv.addr, "/").status == 200
    assert srv.proc.poll() is None
