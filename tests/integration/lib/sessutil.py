"""Helpers for the session tests: the app module's path, visits with curl
cookie jars (one jar per visitor), and a throwaway redis-server on a free
127.0.0.1 port, stopped by its PID."""
import pathlib
import socket
import subprocess
import time

from lib.server import BIN, CURL
from lib.proctools import ServerProcess, free_port

APP = str(pathlib.Path(BIN).parent / "tests" / "fixtures" / "c" / "app_sessions.so")
REDIS = "/usr/bin/redis-server"


class Visit:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body
        self.fields = dict(kv.split("=", 1) for kv in body.split() if "=" in kv)

    def header(self, name):
        return [v for k, v in self.headers if k.lower() == name.lower()]

    @property
    def count(self):
        return int(self.fields["count"])

    def __repr__(self):
        return "<Visit %s %r>" % (self.status, self.body)


def visit(srv, path, jar=None, cookie=None, headers=()):
    """GET path with curl on a new connection: with a cookie jar (read and
    written, like a browser), or a raw Cookie header; headers: more
    "Name: value" lines."""
    args = [CURL, "-s", "-m", "5", "-D", "-", "http://127.0.0.1:%d%s" % (srv.port, path)]
    if jar is not None:
        args += ["-b", str(jar), "-c", str(jar)]
    if cookie is not None:
        args += ["-H", "Cookie: " + cookie]
    for h in headers:
        args += ["-H", h]
    out = subprocess.run(args, capture_output=True, timeout=10).stdout.decode("latin-1")
    head, _, body = out.partition("\r\n\r\n")
    lines = head.split("\r\n")
    headers = [tuple(x.strip() for x in line.split(":", 1)) for line in lines[1:] if ":" in line]
    return Visit(int(lines[0].split()[1]), headers, body.strip())


def sid_of(v):
    """The spindle_sid value a response set."""
    for h in v.header("Set-Cookie"):
        if h.startswith("spindle_sid="):
            return h.split(";")[0][len("spindle_sid="):]
    raise AssertionError("no session cookie in %r" % v.headers)


class Redis(ServerProcess):
    """redis-server on 127.0.0.1:<free port> (a proctools.ServerProcess);
    appendonly=True keeps its data across stop() and start() again (the
    bus tests restart it in place)."""

    name = "redis-server"

    def __init__(self, tmp_path, appendonly=False, certs=None, password=None, cert="localhost"):
        super().__init__(port=free_port())
        self.dir = tmp_path / ("redis-%d" % self.port)
        self.dir.mkdir()
        self.appendonly = appendonly
        self.certs, self.cert, self.password = certs, cert, password  # certs: TLS only
        self.start()

    def start(self, extra=(), ready=b"+PONG\r\n"):
        """extra: more redis-server flags; ready: PING's reply to wait for
        (b"-LOADING": up, but still reading its data set back)."""
        aof = ["--appendonly", "yes", "--appendfsync", "always"] if self.appendonly else ["--appendonly", "no"]
        if self.certs:
            c = self.certs
            aof += ["--port", "0", "--tls-port", str(self.port), "--tls-cert-file", c.cert(self.cert),
                    "--tls-key-file", c.key(self.cert), "--tls-ca-cert-file", c.ca,
                    "--tls-auth-clients", "no"]
        if self.password:
            aof += ["--requirepass", self.password]
        self.launch([REDIS, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""] + aof +
                    ["--daemonize", "no", "--dir", str(self.dir)] + list(extra),
                    stdout_path=self.dir / "redis.log", merge_stderr=True, cwd=str(self.dir),
                    new_session=False)
        try:
            self.wait_until(lambda: self.command("PING").startswith(ready), 5, step=0.05)
        except RuntimeError:
            self.stop()
            raise RuntimeError("redis-server did not start: %s" %
                               (self.dir / "redis.log").read_text(errors="replace"))

    def command(self, *args, db=0):
        """One command in RESP (after AUTH and SELECT when needed); the raw
        reply (enough for these tests)."""
        def enc(cmd):
            return b"*%d\r\n" % len(cmd) + b"".join(
                b"$%d\r\n%s\r\n" % (len(a), a.encode()) for a in cmd)
        pre = ([("AUTH", self.password)] if self.password else []) + ([("SELECT", str(db))] if db else [])
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
            if self.certs:
                s = self.certs.context().wrap_socket(s, server_hostname="localhost")
            for cmd in pre:
                s.sendall(enc(cmd))
                time.sleep(0.02)
                s.recv(65536)
            s.sendall(enc(args))
            time.sleep(0.05)
            return s.recv(65536)

    def stop(self):
        super().stop(3, 3)
