"""Zero-downtime process control (issue 7, "Process control with no lost
requests"): HUP reload under continuous keep-alive load with zero failed or
reset requests, and the USR2 binary upgrade that keeps the listening socket.
"""
import os
import re
import signal
import subprocess
import tempfile
import time

from lib.opsutil import Load, Notify, listening_inodes, ops_spindle, pid_alive, read_pid, wait_for  # noqa: F401

WRK = "/usr/bin/wrk"


def _wrk_summary(out):
    m = re.search(r"(\d+) requests in ([\d.]+)s", out)
    assert m, "no summary in wrk's output:\n" + out
    return int(m.group(1))


def test_hup_reload_under_keepalive_load_loses_nothing(ops_spindle):
    srv = ops_spindle("--keepalive-timeout", "2", workers=2)
    gen1 = srv.workers_now()
    assert len(gen1) == 2, gen1

    wrk = subprocess.Popen([WRK, "-t1", "-c20", "-d6s", "--timeout", "2s",
                            "http://127.0.0.1:%d/" % srv.port],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # Idle keep-alive clients: one request every 300 ms on the same
    # connection, the race a busy benchmark hides.
    load = Load(srv.addr, keepalive=5, interval=0.3).start()
    try:
        time.sleep(1.5)
        srv.signal(signal.SIGHUP)
        gen2 = wait_for(lambda: (lambda w: w if len(w - gen1) >= 2 else None)(srv.workers_now()), 5)
        assert gen2, "no new generation of workers 5 s after HUP:\n" + srv.stderr()
        gen2 = gen2 - gen1
        time.sleep(1.5)
        srv.signal(signal.SIGHUP)
        gen3 = wait_for(lambda: (lambda w: w if len(w - gen1 - gen2) >= 2 else None)(srv.workers_now()), 5)
        assert gen3, "no third generation of workers 5 s after the second HUP:\n" + srv.stderr()
        gen3 = gen3 - gen1 - gen2
        try:
            out, _ = wrk.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            wrk.kill()
            out, _ = wrk.communicate()
            raise AssertionError("wrk did not finish:\n" + out)
        time.sleep(0.7)  # the idle clients go on a little after the last reload
    finally:
        load.stop()
        if wrk.poll() is None:
            wrk.kill()
            wrk.communicate()

    assert wrk.returncode == 0, out
    total = _wrk_summary(out)
    assert "Socket errors" not in out, "wrk saw socket errors across two reloads:\n" + out
    assert "Non-2xx" not in out, "wrk saw non-2xx responses across two reloads:\n" + out
    assert total > 500, "too little load to prove anything:\n" + out
    assert not load.failures, "idle keep-alive clients lost requests (%d ok):\n%s\n--- server log:\n%s" % (
        load.ok, "\n".join(load.failures[:20]), srv.stderr()[-3000:])
    # Each idle client was told to reconnect (Connection: close) at least once
    # per reload, and kept working.
    assert load.ok >= 5 * 10, load.ok
    assert load.closes >= 5, "the draining workers never answered with Connection: close (%d)" % load.closes

    # Old generations are gone, the newest serves.
    gone = wait_for(lambda: not any(pid_alive(p) for p in gen1 | gen2), 6)
    assert gone, "old workers still running: %s\n%s" % (
        [p for p in gen1 | gen2 if pid_alive(p)], srv.stderr()[-3000:])
    assert srv.workers_now() == gen3
    assert gen3.isdisjoint(gen1) and gen3.isdisjoint(gen2)
    err = srv.stderr()
    assert err.count("reload: 2 new worker(s) started") == 2, err[-3000:]
    # They drained; none had to be cut off at --graceful-timeout.
    assert "graceful timeout" not in err, err[-3000:]


def test_usr2_binary_upgrade_keeps_the_socket(ops_spindle, tmp_path):
    pidf = tmp_path / "spindle.pid"
    notify_dir = tempfile.mkdtemp(prefix="spn-", dir="/tmp")
    notify = Notify(notify_dir + "/notify")
    try:
        srv = ops_spindle("--pid", str(pidf), "--keepalive-timeout", "2", workers=2,
                          env={"NOTIFY_SOCKET": notify.path})
        srv.pid_file = str(pidf)
        old = srv.pid
        assert wait_for(lambda: read_pid(pidf) == old, 3), "pid file %s not written" % pidf
        old_workers = srv.workers_now()
        sock_before = listening_inodes(old, srv.port)
        assert len(sock_before) == 1, sock_before
        assert notify.wait_for(lambda m: m == "MAINPID=%d\nREADY=1" % old, 3) is not None, notify.messages
        n_before = len(notify.messages)

        # Light continuous load: idle keep-alive clients and a fresh connection
        # every 20 ms; a refused or reset connection at any moment fails.
        load = Load(srv.addr, keepalive=3, fresh=2, interval=0.02).start()
        try:
            time.sleep(0.5)
            srv.signal(signal.SIGUSR2)
            oldbin = str(pidf) + ".oldbin"
            assert wait_for(lambda: read_pid(oldbin) == old, 3), \
                "%s does not hold the old master's pid %d:\n%s" % (oldbin, old, srv.stderr())
            new = wait_for(lambda: (lambda p: p if p and p != old else None)(read_pid(pidf)), 8)
            assert new, "the pid file never named a new master:\n" + srv.stderr()
            srv.note_master(new)
            assert new in srv.children(old) or pid_alive(new)
            assert srv.wait_exit(8) is not None, "the old master did not exit:\n" + srv.stderr()
            assert srv.proc.returncode == 0, srv.stderr()
            time.sleep(0.5)  # the new master alone serves the load for a while
        finally:
            load.stop()
        assert not load.failures, "requests failed during the upgrade (%d ok):\n%s\n--- log:\n%s" % (
            load.ok, "\n".join(load.failures[:20]), srv.stderr()[-3000:])
        assert load.ok > 50, load.ok

        assert pid_alive(new)
        err = srv.stderr()
        assert "listening on 127.0.0.1:%d (socket inherited)" % srv.port in err, err
        # The very same listening socket, not a new bind of the same port.
        assert listening_inodes(new, srv.port) == sock_before, (listening_inodes(new, srv.port), sock_before)
        new_workers = wait_for(lambda: (lambda w: w if len(w) == 2 else None)(srv.workers_now(new)), 3)
        assert new_workers and new_workers.isdisjoint(old_workers), new_workers
        assert wait_for(lambda: not any(pid_alive(p) for p in old_workers), 5), "old workers still run"
        # systemd is told the new main pid.
        assert notify.wait_for(lambda m: m == "MAINPID=%d\nREADY=1" % new, 3, since=n_before) is not None, \
            notify.messages
        assert read_pid(pidf) == new
        # It serves on its own, and stops cleanly on TERM, removing the pid file.
        assert srv.workers_now(new)
        srv.signal(signal.SIGTERM, new)
        assert wait_for(lambda: not pid_alive(new), 6), "new master did not stop"
        assert not pidf.exists(), "pid file left after the new master stopped"
    finally:
        notify.close()
        try:
            os.rmdir(notify_dir)
        except OSError:
            pass


def test_usr2_old_master_removes_oldbin_when_it_exits(ops_spindle, tmp_path):
    """FILE.oldbin names the old master only while it runs: once it has
    drained and exited, the file goes (nginx and gunicorn both remove it), so
    a stale FILE.oldbin never names a dead or reused pid."""
    pidf = tmp_path / "spindle.pid"
    srv = ops_spindle("--pid", str(pidf), workers=1)
    srv.pid_file = str(pidf)
    old = srv.pid
    assert wait_for(lambda: read_pid(pidf) == old, 3)
    srv.signal(signal.SIGUSR2)
    new = wait_for(lambda: (lambda p: p if p and p != old else None)(read_pid(pidf)), 8)
    assert new, srv.stderr()
    srv.note_master(new)
    assert srv.wait_exit(8) is not None, "the old master did not exit:\n" + srv.stderr()
    oldbin = tmp_path / "spindle.pid.oldbin"
    assert wait_for(lambda: not oldbin.exists(), 1), \
        "%s (pid %s) left behind after the old master %d exited" % (oldbin.name, read_pid(oldbin), old)
