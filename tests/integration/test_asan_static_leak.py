"""The ASan binary with --root and --static-map mounts, started, asked for a
file from each mount, stopped by TERM: LeakSanitizer must print nothing and
the process must exit 0 (a leak report makes the exit status 1). The static
feature frees its mounts through the server's extension slot; before that,
each mount (its struct, MIME table and prefix) was reported at exit."""
import os
import pathlib
import signal
import socket

import pytest

from lib.client import Conn

from lib.server import ROOT, SANITIZER_MARKS
from lib.proctools import ServerProcess, free_port, http_probe, start_on_free_port

ASAN_BIN = ROOT / "build/asan/spindle"

pytestmark = pytest.mark.skipif(not os.access(ASAN_BIN, os.X_OK),
                                reason="build/asan/spindle is not built (make MODE=asan build/asan/spindle)")


def get(port, path):
    with Conn(("127.0.0.1", port), 5) as c:
        c.send(b"GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n" % path.encode())
        return c.read_response()


@pytest.mark.parametrize("workers", ["0", "1"])
def test_static_mounts_freed_at_exit(tmp_path, workers):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_bytes(b"root file\n")
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:allow_user_segv_handler=1")
    err = tmp_path / "asan.err"

    def make():
        port = free_port()
        argv = [str(ASAN_BIN), "--bind", "127.0.0.1:%d" % port, "--workers", workers,
                "--graceful-timeout", "1", "--root", str(docs),
                "--static-map", "/s=%s" % docs, "--static-map", "/t/=%s" % docs]
        return ServerProcess(argv, str(err), port=port, env=env, cwd=str(ROOT))

    srv = start_on_free_port(make, lambda s: s.wait_until(lambda: http_probe("127.0.0.1:%d" % s.port), 10),
                             lambda s: s.stop())
    try:
        for path in ("/a.txt", "/s/a.txt", "/t/a.txt"):
            r = get(srv.port, path)
            assert r.status == 200 and r.body == b"root file\n", (path, r)
        os.kill(srv.pid, signal.SIGTERM)
        rc = srv.wait_exit(20)
    finally:
        srv.stop()
    text = pathlib.Path(err).read_text(errors="replace")
    assert rc is not None, "spindle did not exit within 20 s of TERM:\n" + text[-3000:]
    assert not any(m in text for m in SANITIZER_MARKS), text[-6000:]
    assert rc == 0, "exit status %s:\n%s" % (rc, text[-3000:])
