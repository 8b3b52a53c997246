"""Helpers for the ASGI tests (tests/integration/test_asgi_*.py): an
AsgiServer is a wsgiutil.WsgiServer (`python3 -m spindle SPEC` on a free
port, stopped by its PID, stderr checked) serving tests/asgi_apps; `asgi`
starts them per test, `shared_asgi` one per module for the many read-only
checks. Every socket has a timeout; every wait is bounded."""
import json
import os
import socket
import time

import pytest

from wsgiutil import PYPATH, ROOT, Conn, WsgiServer, wait_for  # noqa: F401

APPS = ROOT / "tests" / "asgi_apps"


class AsgiServer(WsgiServer):
    name = "spindle ASGI server"

    def __init__(self, spec, args=(), env=None, **kw):
        env = dict(env or {})
        env.setdefault("PYTHONPATH", PYPATH + os.pathsep + str(APPS))
        kw.setdefault("chdir", APPS)
        super().__init__(spec, args, env=env, **kw)

    def json(self, path, **kw):
        r = self.get(path, **kw)
        assert r.status == 200, (path, r.status, r.body)
        return json.loads(r.body)

    def events(self):
        return self.json("/events")

    def request(self, data, timeout=5):
        """Raw bytes in, everything until the server closes out."""
        return self.raw(data, timeout)


def _starter(logdir, servers):
    def start(spec="asgi_spec:app", *args, **kw):
        kw.setdefault("logdir", logdir)
        s = AsgiServer(spec, args, **kw)
        servers.append(s)
        s.start()
        return s
    return start


def _finish(servers):
    problems = []
    for s in servers:
        rc = s.stop()
        problems += s.problems()
        if rc not in (0, None) and not s.expect_exit:
            problems.append("%s exited with %s after SIGTERM:\n%s" % (s.spec, rc, s.stderr()[-3000:]))
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


@pytest.fixture
def asgi(tmp_path):
    """asgi(spec='asgi_spec:app', *flags, env=None, expect_tracebacks=False, ...)"""
    servers = []
    yield _starter(tmp_path, servers)
    _finish(servers)


@pytest.fixture(scope="module")
def shared_asgi(tmp_path_factory):
    """One asgi_spec:app server for a module (tracebacks expected: the
    error tests provoke them)."""
    servers = []
    s = _starter(tmp_path_factory.mktemp("asgi"), servers)("asgi_spec:app",
                                                             expect_tracebacks=True)
    yield s
    _finish(servers)


def connect(port, timeout=5):
    return socket.create_connection(("127.0.0.1", port), timeout=timeout)


def recv_until(s, marker, timeout=5, limit=1 << 24):
    """Reads until marker is in the data (or the peer closes)."""
    data = b""
    end = time.monotonic() + timeout
    while marker not in data and len(data) < limit and time.monotonic() < end:
        d = s.recv(65536)
        if not d:
            break
        data += d
    return data
