"""--user keeps the master's rights and drops the workers' (the security
review's "renewed keys need a world-readable key"): started as root with
--user nobody, the master stays root, so a HUP rereads a new root-only
(0600) certificate and key and new connections get it; every worker runs
as nobody (its /proc status), cannot open the key (EACCES, as an
application's file-read bug would find) and is not dumpable unless
--core-dumps; a --sessions sqlite:PATH database is still made by nobody;
under python3 -m spindle the application is imported only as nobody, and
--preload with --user (which would import it as root) is refused."""
import os
import pathlib
import pwd
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile

import pytest

from lib.opsutil import ROOT, free_port, http_get, ops_spindle, wait_for  # noqa: F401
from lib.procutil import children
from lib.sessutil import APP as SESS_APP, visit
from lib.tlsutil import https_get, unverified_ctx
from lib.wsgiutil import WsgiServer

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="--user switches from root")

APP = str(ROOT / "build" / "tests" / "fixtures" / "c" / "app_privs.so")
SYS_PY = "/usr/bin/python3"
SYS_BINDING = ROOT / "build" / "python-system"  # the binding built for SYS_PY (make python-system)


@pytest.fixture
def nobody():
    return pwd.getpwnam("nobody")


@pytest.fixture
def pub_dir():
    """A directory under /tmp that nobody may enter (pytest's tmp_path is
    0700), so that only a file's own mode keeps nobody out."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="spindle-privs-", dir="/tmp"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def root_only_pair(d, name, cn):
    """A self-signed certificate and its key, both root's and mode 0600."""
    cert, key = str(d / (name + ".pem")), str(d / (name + ".key"))
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=" + cn,
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True,
                   capture_output=True, timeout=30)
    for f in (cert, key):
        os.chown(f, 0, 0)
        os.chmod(f, 0o600)
    return cert, key


def served_cert(port):
    """The DER certificate the server presents to a new connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=3) as raw:
        with unverified_ctx().wrap_socket(raw, server_hostname="localhost") as s:
            return s.getpeercert(binary_form=True)


def https_body(port, path):
    """The body of a 200 answer to GET path over TLS."""
    status, body, *_ = https_get(port, path)
    assert status == 200, (status, body)
    return body.decode()


def der(path):
    with open(path) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


def uids(pid):
    """The real, effective, saved and filesystem uids of pid (/proc/PID/status)."""
    for line in pathlib.Path("/proc/%d/status" % pid).read_text().splitlines():
        if line.startswith("Uid:"):
            return [int(x) for x in line.split()[1:]]
    raise AssertionError("no Uid line for %d" % pid)


def test_hup_rereads_a_root_only_key_while_workers_run_as_nobody(ops_spindle, pub_dir, nobody):
    cert, key = root_only_pair(pub_dir, "cert", "spindle-privs-one")
    port = free_port()
    srv = ops_spindle("--app", APP, "--bind", "https://127.0.0.1:%d" % port, "--certfile", cert,
                      "--keyfile", key, "--user", "nobody", workers=2, bind=False, port=port,
                      ready=False)
    assert srv.wait_until(lambda: len(srv.workers_now()) >= 2 and served_cert(port), 8,
                          errors=(OSError, ssl.SSLError)), srv.stderr()
    assert served_cert(port) == der(cert)
    gen1 = srv.workers_now()
    for w in gen1:
        assert uids(w) == [nobody.pw_uid] * 4, (w, srv.stderr())
    ids = https_body(port, "/ids")
    assert "uid=%d euid=%d" % (nobody.pw_uid, nobody.pw_uid) in ids and "dumpable=0" in ids, ids
    # What an application's file-read bug would find: the key is closed to it.
    assert https_body(port, "/open?path=%s" % key).strip() == "errno=13"
    assert https_body(port, "/open?path=%s" % cert).strip() == "errno=13"
    # A renewed pair, root's and 0600 too, renamed over the old paths; HUP.
    new_cert, new_key = root_only_pair(pub_dir, "next", "spindle-privs-two")
    new = der(new_cert)
    os.replace(new_key, key)
    os.replace(new_cert, cert)
    srv.signal(signal.SIGHUP)
    assert wait_for(lambda: len(srv.workers_now() - gen1) >= 2, 6), srv.stderr()
    assert "reload: the configuration has errors" not in srv.stderr(), srv.stderr()
    assert wait_for(lambda: served_cert(port) == new, 4), srv.stderr()
    assert all(served_cert(port) == new for _ in range(6))
    for w in srv.workers_now() - gen1:
        assert uids(w) == [nobody.pw_uid] * 4, (w, srv.stderr())
    assert https_body(port, "/open?path=%s" % key).strip() == "errno=13"
    # The master kept root's rights: that is what reread the key.
    assert uids(srv.pid) == [0, 0, 0, 0], srv.stderr()


def test_sqlite_store_made_by_nobody_while_the_master_stays_root(ops_spindle, tmp_path, nobody):
    d = pathlib.Path(tempfile.mkdtemp(prefix="spindle-sess-", dir="/tmp"))  # reachable by nobody
    try:
        os.chown(d, nobody.pw_uid, nobody.pw_gid)
        db = d / "sessions.db"
        srv = ops_spindle("--app", SESS_APP, "--sessions", "sqlite:%s" % db, "--user", "nobody",
                          "--core-dumps", workers=1, env={"SESSIONS_STORE": "memory"})
        assert db.stat().st_uid == nobody.pw_uid  # made before the first worker, by nobody
        jar = tmp_path / "a.jar"
        first = visit(srv, "/count", jar)
        assert first.status == 200 and first.count == 1, (first, srv.stderr())
        assert visit(srv, "/count", jar).count == 2
        assert uids(srv.pid)[0] == 0, srv.stderr()
        assert all(uids(w)[0] == nobody.pw_uid for w in srv.workers_now())
        # --core-dumps holds after the worker's own switch (which resets the flag).
        assert http_get(srv.addr, "/dumpable", timeout=2).body.decode().strip() == "dumpable=1"
    finally:
        shutil.rmtree(d, ignore_errors=True)


PY_APP = '''import os
if os.getuid() == 0 or os.geteuid() == 0:
    raise SystemExit("privs_app imported as root")


def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"uid=%d" % os.getuid()]
'''


@pytest.mark.skipif(not (SYS_BINDING / "spindle").is_dir() or not os.access(SYS_PY, os.X_OK),
                    reason="needs Debian's python3 and build/python-system (make python-system): "
                           "a worker running as nobody imports from the standard library")
def test_python_app_imported_only_as_nobody(pub_dir, nobody):
    (pub_dir / "privs_app.py").write_text(PY_APP)
    srv = WsgiServer("privs_app:application", chdir=pub_dir, logdir=pub_dir,
                     env={"PYTHONPATH": "%s:%s" % (SYS_BINDING, pub_dir)},
                     cmd=[SYS_PY, "-m", "spindle", "privs_app:application", "--bind", "127.0.0.1:{port}",
                          "--workers", "2", "--chdir", str(pub_dir), "--user", "nobody"])
    srv.start()
    try:
        r = http_get(srv.addr, "/", timeout=3)
        assert r.status == 200 and r.body == b"uid=%d" % nobody.pw_uid, (r, srv.stderr())
        assert uids(srv.pid)[0] == 0, srv.stderr()
        kids = children(srv.pid)
        assert len(kids) >= 2 and all(uids(k)[0] == nobody.pw_uid for k in kids), srv.stderr()
        assert "imported as root" not in srv.stderr()
    finally:
        srv.stop()


def test_preload_with_user_is_refused(pub_dir):
    (pub_dir / "privs_app.py").write_text(PY_APP)
    from lib.wsgiutil import PY, env_for
    r = subprocess.run([PY, "-m", "spindle", "privs_app:application", "--preload", "--user", "nobody",
                        "--bind", "127.0.0.1:%d" % free_port(), "--chdir", str(pub_dir)],
                       capture_output=True, text=True, timeout=20,
                       env=env_for({"PYTHONPATH": env_for()["PYTHONPATH"] + ":%s" % pub_dir}))
    assert r.returncode != 0 and "--preload with --user" in r.stderr, r.stderr
    assert "imported as root" not in r.stderr, r.stderr  # refused before the import


def test_error_log_reopened_by_the_root_master_stays_the_workers(ops_spindle, pub_dir, nobody):
    """logrotate moves --error-log away and sends USR1: the master (root)
    makes the new file, which becomes nobody's, so each worker's own reopen
    succeeds and its lines land in the new file (nginx chowns likewise)."""
    log = pub_dir / "error.log"
    srv = ops_spindle("--user", "nobody", "--error-log", str(log), workers=1)
    assert log.stat().st_uid == nobody.pw_uid
    os.rename(log, pub_dir / "error.log.1")
    srv.signal(signal.SIGUSR1)
    assert wait_for(lambda: log.exists() and "reopening the logs" in log.read_text(), 5)
    assert log.stat().st_uid == nobody.pw_uid
    worker = sorted(children(srv.pid))[0]
    srv.stop()
    text = log.read_text()
    assert "cannot reopen" not in text + (pub_dir / "error.log.1").read_text(), text
    assert "worker %d exiting" % worker in text, text
