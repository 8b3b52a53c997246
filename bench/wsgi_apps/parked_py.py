#!/usr/bin/python3
"""What a parked Python handler costs: one worker serving
bench/wsgi_apps/parked_app.py (10 warm-up clients first), N clients parked on /ws (WebSockets) or
/poll (long polls); the worker's RSS before and with them, per client and
per kind of mapping (/proc/PID/smaps: the 64 KiB mappings are coroutine
stacks, the ~1 MiB ones pymalloc's arenas). The Python memory they hold
(tracemalloc) is tests/integration/test_py_websocket_memory.py's figure.
Long polls never read their socket, so closed clients' handlers stay
parked until the stop's --graceful-timeout (2 s here) ends them.

usage: bench/wsgi_apps/parked_py.py [N=2000] [ws|poll] [--json]
(--json: one more line, a JSON object, for bench/run's parked workload;
SPINDLE_PY= names the binding's directory, build/python by default)"""
import base64
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def smaps(pid):
    """{mapping kind: resident bytes}: the file, or [anon SIZE] by its size."""
    out, kind = {}, None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            fields = line.split()
            if "-" in fields[0] and not fields[0].endswith(":"):
                lo, hi = (int(x, 16) for x in fields[0].split("-"))
                kind = fields[5] if len(fields) > 5 else "[anon %d KiB]" % ((hi - lo) // 1024)
            elif fields[0] == "Rss:":
                out[kind] = out.get(kind, 0) + int(fields[1]) * 1024
    return out


def park(port, path):
    c = socket.create_connection(("127.0.0.1", port), timeout=30)
    if path == "/ws":
        key = base64.b64encode(os.urandom(16)).decode()
        c.sendall(("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % key).encode())
    else:
        c.sendall(b"GET /poll HTTP/1.1\r\nHost: x\r\n\r\n")
    return c


def wait_hello(c):
    got = b""
    while b"hello" not in got:
        d = c.recv(4096)
        if not d:
            raise SystemExit("a client was closed before it was parked")
        got += d


def main():
    as_json = "--json" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--json"]
    n = int(args[0]) if args else 2000
    path = "/" + (args[1] if len(args) > 1 else "ws")
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    env = dict(os.environ, PYTHONPATH=os.environ.get("SPINDLE_PY") or os.path.join(ROOT, "build", "python"))
    server = subprocess.Popen([sys.executable, "-m", "spindle", "parked_app:application", "--chdir", HERE,
                               "--bind", "127.0.0.1:%d" % port, "--workers", "1", "--log-level", "warning",
                               "--max-connections", str(n + 200), "--graceful-timeout", "2"], env=env)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("the server did not start")
                time.sleep(0.1)
        time.sleep(0.5)
        worker = int(subprocess.run(["pgrep", "-P", str(server.pid)], stdout=subprocess.PIPE).stdout.split()[0])
        # Caches filled once; few, since each closed one leaves a coroutine
        # stack in the pool with its touched pages, which a new parked
        # connection reusing it gives back (bench/harness/asgi.py says more).
        warm = [park(port, path) for _ in range(10)]
        for c in warm:
            wait_hello(c)
            c.close()
        time.sleep(1)
        r0, m0 = rss(worker), smaps(worker)
        clients = [park(port, path) for _ in range(n)]
        for c in clients:
            wait_hello(c)
        time.sleep(1)
        r1, m1 = rss(worker), smaps(worker)
        print("%d parked on %s: RSS %d -> %d, %.0f bytes each" % (n, path, r0, r1, (r1 - r0) / n))
        for k in sorted(m1, key=lambda k: m0.get(k, 0) - m1[k])[:5]:
            print("  %-28s %+8.0f bytes each" % (k, (m1[k] - m0.get(k, 0)) / n))
        if as_json:
            print(json.dumps({"parked": n, "path": path, "rss_before": r0, "rss_after": r1,
                              "bytes_each": (r1 - r0) / n}))
        for c in clients:
            c.close()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)


if __name__ == "__main__":
    main()
