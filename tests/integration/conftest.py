"""Fixtures of spindle's integration tests (the helpers are in lib/).

`spindle` (factory) starts the real binary (lib.server.Server: build/spindle,
or $SPINDLE_BIN, e.g. build/asan/spindle) on 127.0.0.1 with a free port (one
worker when the binary has --workers), waits (5 s at most) until it answers a
request, and at teardown stops it by its own PID (SIGTERM, then SIGKILL after
2 s, then its process group) and fails the test if its stderr shows an
AddressSanitizer or UBSan report or a worker that died. `server` is a
default instance with short timeouts. Raw connections to it (srv.connect())
are lib.client.Conn.
"""
import pytest

from lib.proctools import free_port, start_on_free_port
from lib.server import FAST, PROCESS_FLAGS, Server, stop_servers


@pytest.fixture
def spindle(tmp_path, request):
    """Factory: spindle(*flags, binds=None) -> Server (already accepting).

    With binds=None it listens on 127.0.0.1:<free port>; otherwise binds is
    a list of --bind values (the first TCP one gives .port/.host)."""
    servers = []

    def start(*flags, binds=None, fast=True):
        # With a port of our choosing, a port taken before spindle binds it
        # means another try on a fresh one.
        def discard(srv):
            srv.stop()
            servers.remove(srv)
        return start_on_free_port(lambda: _start_once(flags, binds, fast), Server.wait_ready, discard,
                                  retry=binds is None)

    def _start_once(flags, binds, fast):
        if binds is None:
            binds = ["127.0.0.1:%d" % free_port()]
        port = None
        host = "127.0.0.1"
        for b in binds:
            if not b.startswith("unix:"):
                h, _, p = b.rpartition(":")
                host, port = h.strip("[]"), int(p)
                break
        args = []
        for b in binds:
            args += ["--bind", b]
        args += PROCESS_FLAGS + (FAST if fast else []) + list(flags)
        srv = Server(args, str(tmp_path / ("spindle-%d.err" % len(servers))), binds, port)
        srv.host = host
        servers.append(srv)
        return srv

    yield start
    problems = stop_servers(servers)
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


@pytest.fixture
def server(spindle):
    return spindle()
