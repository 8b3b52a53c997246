"""Helpers of test_asgi_frameworks.py: the same ASGI application served by
uvicorn (the reference: python3 -m uvicorn MODULE:APP) and by spindle
(python3 -m spindle MODULE:APP --workers 1), started together, one pair per
framework for the whole module; a raw HTTP client (wsgiutil.Conn) and a
WebSocket client (PyPI's websockets, its asyncio API) that give comparable results."""
import asyncio
import os
import pathlib
import re
import socket
import time

from lib.proctools import ServerProcess, children, connect_probe, free_port
from lib.client import Conn
from lib.wsgiutil import FAST, PY, PYPATH

APPS = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "asgi"

# Headers that are the server's business, not the application's.
SERVER_HEADERS = {"date", "server", "content-length", "transfer-encoding", "connection", "keep-alive"}
# In a server's stderr: a crash, never acceptable (tracebacks of /boom are).
CRASH_MARKS = ("Fatal Python error", "Segmentation fault", "AddressSanitizer", "runtime error:",
               "starting a new one", "core dumped")


def env_for(extra):
    env = dict(os.environ)
    env.update(extra)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("PYTHONSTARTUP", None)
    return env


class AsgiServer(ServerProcess):
    """kind 'uvicorn' or 'spindle' serving SPEC from tests/fixtures/asgi/ on a free port."""

    def __init__(self, kind, spec, logdir, env, args=()):
        super().__init__()
        self.kind, self.spec, self.name = kind, spec, "%s %s" % (kind, spec)
        self.port = free_port()
        if kind.startswith("uvicorn"):
            # uvicorn-h11: the pure-Python parser (to check the matrix itself)
            argv = [PY, "-m", "uvicorn", spec, "--host", "127.0.0.1", "--port", str(self.port),
                    "--app-dir", str(APPS), "--no-access-log"] + (["--http", "h11"] if kind == "uvicorn-h11" else [])
            pypath = str(APPS)
        elif kind == "hypercorn":  # another reading of the spec, to see the matrix fail
            argv = [PY, "-m", "hypercorn", spec, "--bind", "127.0.0.1:%d" % self.port]
            pypath = str(APPS)
        else:
            argv = [PY, "-m", "spindle", spec, "--bind", "127.0.0.1:%d" % self.port, "--workers", "1",
                    "--chdir", str(APPS)] + FAST
            pypath = PYPATH + os.pathsep + str(APPS)
        argv += list(args)
        tag = "%s-%s-%d" % (kind, re.sub(r"\W+", "_", spec), self.port)
        self.launch(argv, pathlib.Path(logdir) / (tag + ".stderr"), pathlib.Path(logdir) / (tag + ".stdout"),
                    env=env_for(dict(env, PYTHONPATH=pypath)), cwd=str(APPS))
        self.close_files()

    def wait_ready(self, timeout=20):
        """Until a whole request gets an answer (spindle's master listens
        before its worker has imported the app)."""
        def probe():
            if not connect_probe(("127.0.0.1", self.port), 0.5):
                return False
            with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
                s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                return s.recv(16).startswith(b"HTTP/1.")
        self.wait_until(probe, timeout, step=0.05, errors=(OSError,), error=AssertionError)
        return self

    def stop(self):
        super().stop(group=self.kind == "spindle")  # its workers are in its own session

    def worker_pids(self):
        return sorted(children(self.pid)) if self.kind == "spindle" else [self.pid]

    def problems(self):
        err = self.stderr()
        found = [m for m in CRASH_MARKS if m in err]
        return ["%s: %s in stderr:\n%s" % (self.name, found, err[-4000:])] if found else []


def fetch(port, method, path, headers=(), body=None, send=None, timeout=15):
    """One request on a fresh connection: (status, headers, body, complete).
    send(conn) replaces the plain body (streamed or chunked uploads)."""
    with Conn(port, timeout) as c:
        given = {k.lower() for k, _ in headers}
        hs = ([] if "host" in given else [("Host", "127.0.0.1")]) + list(headers) + [("Connection", "close")]
        if send is None:
            c.request(method, path, headers=hs, body=body)
        else:
            c.request(method, path, headers=hs)
            send(c)
        r = c.response(head=(method == "HEAD"))
        while 100 <= r.status < 200:  # 100 Continue (the body went with the head)
            r = c.response(head=(method == "HEAD"))
        return r.status, r.headers, r.body, r.complete


def unordered(name, value):
    """Allow's methods come from a set in Quart (werkzeug): their order
    depends on the process's hash seed, so it is not compared."""
    if name.lower() == "allow":
        return ", ".join(sorted(t.strip() for t in value.split(",")))
    return value


def norm(resp, mask=None):
    """What must be equal: status, the application's headers (lower-cased,
    sorted), the body; MASK(text) blanks values that differ by nature."""
    status, hdrs, body, complete = resp
    m = mask or (lambda s: s)
    hs = sorted((k.lower(), m(unordered(k, v))) for k, v in hdrs if k.lower() not in SERVER_HEADERS)
    return status, hs, m(body.decode("latin-1")), complete


def length_problem(resp, method):
    """A Content-Length that does not match the body, or none."""
    cl = [v for k, v in resp[1] if k.lower() == "content-length"]
    if method != "HEAD" and resp[0] not in (204, 304) and cl and int(cl[0]) != len(resp[2]):
        return "Content-Length %s but %d bytes" % (cl[0], len(resp[2]))
    return None


def trickle(body, pieces=4, pause=0.02):
    """A send() for fetch: BODY in PIECES writes with pauses (Content-Length set)."""
    def send(c):
        step = max(1, -(-len(body) // pieces))
        for i in range(0, len(body), step):
            c.send(body[i:i + step])
            time.sleep(pause)
    return send


def chunked(body, pieces=4, pause=0.02):
    """A send() for fetch: BODY as a chunked request body (Transfer-Encoding
    set by the caller), a chunk per write."""
    def send(c):
        step = max(1, -(-len(body) // pieces))
        for i in range(0, len(body), step):
            part = body[i:i + step]
            c.send(b"%x\r\n%s\r\n" % (len(part), part))
            time.sleep(pause)
        c.send(b"0\r\n\r\n")
    return send


def ws_session(port, path, script, subprotocols=None, timeout=3):
    """Runs a WebSocket session with websockets (no compression, so
    both servers see the same handshake): each message of SCRIPT is sent and
    one answer awaited; a close from the server ends the script. Returns a
    dict: the subprotocol, what was received, the close (code, reason), or
    the status that refused the handshake."""
    import websockets
    from websockets.asyncio.client import connect

    async def run():
        out = {"subprotocol": None, "received": [], "close": None, "refused": None}
        try:
            ws = await asyncio.wait_for(connect(
                "ws://127.0.0.1:%d%s" % (port, path), subprotocols=subprotocols, compression=None,
                open_timeout=timeout, close_timeout=timeout, ping_interval=None), timeout + 1)
        except websockets.exceptions.InvalidStatus as e:
            out["refused"] = e.response.status_code
            return out
        except websockets.exceptions.InvalidHandshake as e:
            out["refused"] = type(e).__name__
            return out
        out["subprotocol"] = ws.subprotocol
        out["x-accepted-by"] = ws.response.headers.get("x-accepted-by")
        try:
            for msg in script:
                await ws.send(msg)
                try:
                    out["received"].append(await asyncio.wait_for(ws.recv(), timeout))
                except websockets.exceptions.ConnectionClosed:
                    out["received"].append("<closed by the server>")
                    break
            else:
                await ws.close(1000, "client done")
                out["close"] = "client"
        except BaseException:
            ws.transport.abort()  # a hung session ends now, not after the close handshake's wait
            raise
        finally:
            await asyncio.wait_for(ws.wait_closed(), timeout)
            # A close the client started is answered with its code; echoing
            # the reason too is a choice (uvicorn's websockets does, RFC 6455
            # does not ask it): only the code is compared then.
            out["close"] = (ws.close_code,) if out["close"] == "client" else (ws.close_code, ws.close_reason)
        return out

    return asyncio.run(run())
