#!/usr/bin/python3
"""soak.py — mixed load against a real spindle for a while; checks that the
workers do not grow.

Usage: soak.py [--duration SEC] [--sample SEC] [--workers N] [--bin PATH]
               [--warmup SEC] [--rss-slack-mb MB] [--json FILE]

Starts BIN (default build/spindle) on 127.0.0.1:<free port> with N workers
and drives, for --duration seconds, these clients at once (threads):
  keepalive  GET / and /sleep?ms=1 on persistent connections (reconnect / 200)
  close      one GET with Connection: close per connection
  pipeline   bursts of 10 pipelined GETs, read back in order
  slow       a request head trickled over ~1 s, then a small upload trickled
  upload     POST /echo, 1 B..512 KiB, Content-Length or chunked, checked
  hostile    malformed / smuggling / oversized requests and raw garbage: each
             must get its 4xx/5xx answer (or, for garbage, a 400 or a close)
Every --sample seconds it records each worker's RSS and fd count. Passes
when (1) no client saw an unintended error, (2) the workers are the ones it
started (none died), (3) after warm-up (default: a third of the run) no
worker's RSS rose more than --rss-slack-mb (5) above its level at the end of
warm-up, (4) after the load stops and keep-alive timeouts pass, each
worker's fd count is back to its count before the load. Prints each check,
the samples, and "N passed, N failed"; exits 1 on any failure.
"""
import argparse
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from lib.proctools import free_port  # noqa: E402 (the integration tests' one free_port)


def children(pid):
    kids = []
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                kids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return sorted(kids)


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def nfds(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return -1


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.ok = {}
        self.errors = {}
        self.examples = {}

    def good(self, kind):
        with self.lock:
            self.ok[kind] = self.ok.get(kind, 0) + 1

    def bad(self, kind, what):
        with self.lock:
            self.errors[kind] = self.errors.get(kind, 0) + 1
            self.examples.setdefault(kind, [])
            if len(self.examples[kind]) < 5:
                self.examples[kind].append(what)


class Reader:
    def __init__(self, sock):
        self.s = sock
        self.buf = b""

    def fill(self):
        d = self.s.recv(65536)
        if not d:
            raise EOFError("closed")
        self.buf += d

    def response(self):
        while b"\r\n\r\n" not in self.buf:
            self.fill()
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        m = re.search(rb"\r\ncontent-length:\s*(\d+)", head, re.I)
        if m:
            n = int(m.group(1))
            while len(self.buf) < n:
                self.fill()
            body, self.buf = self.buf[:n], self.buf[n:]
        elif re.search(rb"\r\ntransfer-encoding:\s*chunked", head, re.I):
            body = b""
            while True:
                while b"\r\n" not in self.buf:
                    self.fill()
                line, _, self.buf = self.buf.partition(b"\r\n")
                size = int(line.split(b";")[0], 16)
                while len(self.buf) < size + 2:
                    self.fill()
                body += self.buf[:size]
                self.buf = self.buf[size + 2:]
                if size == 0:
                    break
        else:
            body = b""
        return status, head, body


GET = b"GET / HTTP/1.1\r\nHost: soak\r\n\r\n"
HELLO = b"Hello world!"

HOSTILE = [
    (b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    (b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", 400),
    (b"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\n\r\n", 400),
    (b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505),
    (b"GET /" + b"x" * 9000 + b" HTTP/1.1\r\nHost: a\r\n\r\n", 414),
    (b"GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + b"y" * 9000 + b"\r\n\r\n", 431),
    (b"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
    (b"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: a\r\nBad Header: v\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x01b\r\n\r\n", 400),
]


class Load:
    def __init__(self, addr, stop, stats, seed):
        self.addr = addr
        self.stop = stop
        self.stats = stats
        self.rng = random.Random(seed)

    def conn(self, timeout=10):
        s = socket.create_connection(self.addr, timeout=timeout)
        return s, Reader(s)

    def guard(self, kind, fn):
        while not self.stop.is_set():
            try:
                fn()
            except Exception as e:  # noqa: BLE001 — every failure is counted
                if self.stop.is_set():
                    return
                self.stats.bad(kind, "%s: %s" % (type(e).__name__, e))
                time.sleep(0.05)

    def keepalive(self):
        s, r = self.conn()
        try:
            for i in range(200):
                if self.stop.is_set():
                    return
                path = b"/sleep?ms=1" if i % 10 == 0 else b"/"
                s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: soak\r\n\r\n")
                st, _, body = r.response()
                if st != 200:
                    self.stats.bad("keepalive", "status %d" % st)
                else:
                    self.stats.good("keepalive")
        finally:
            s.close()

    def close(self):
        s, r = self.conn()
        try:
            s.sendall(b"GET / HTTP/1.1\r\nHost: soak\r\nConnection: close\r\n\r\n")
            st, _, body = r.response()
            if st != 200 or body != HELLO:
                self.stats.bad("close", "status %d body %r" % (st, body[:40]))
                return
            if s.recv(1):
                self.stats.bad("close", "bytes after Connection: close")
                return
            self.stats.good("close")
        finally:
            s.close()

    def pipeline(self):
        s, r = self.conn()
        try:
            for _ in range(20):
                if self.stop.is_set():
                    return
                s.sendall(GET * 10)
                for _ in range(10):
                    st, _, body = r.response()
                    if st != 200 or body != HELLO:
                        self.stats.bad("pipeline", "status %d" % st)
                        return
                self.stats.good("pipeline")
        finally:
            s.close()

    def slow(self):
        s, r = self.conn()
        try:
            data = b"oksoak" * 20
            req = (b"POST /echo HTTP/1.1\r\nHost: soak\r\nX-Slow: yes\r\nContent-Length: %d\r\n\r\n" %
                   len(data)) + data
            step = max(1, len(req) // 20)
            for i in range(0, len(req), step):
                if self.stop.is_set():
                    return
                s.sendall(req[i:i + step])
                time.sleep(0.05)
            st, _, body = r.response()
            if st != 200 or body != data:
                self.stats.bad("slow", "status %d body %r" % (st, body[:40]))
            else:
                self.stats.good("slow")
        finally:
            s.close()

    def upload(self):
        s, r = self.conn()
        try:
            for _ in range(5):
                if self.stop.is_set():
                    return
                n = self.rng.choice([1, 100, 4096, 65536, 300000, 524288])
                data = bytes([self.rng.randrange(256)]) * n
                if self.rng.random() < 0.5:
                    s.sendall(b"POST /echo HTTP/1.1\r\nHost: soak\r\nContent-Length: %d\r\n\r\n" % n)
                    sender = threading.Thread(target=s.sendall, args=(data,))
                else:
                    chunks = b"".join(b"%x\r\n%s\r\n" % (len(data[i:i + 8000]), data[i:i + 8000])
                                      for i in range(0, n, 8000)) + b"0\r\n\r\n"
                    s.sendall(b"POST /echo HTTP/1.1\r\nHost: soak\r\nTransfer-Encoding: chunked\r\n\r\n")
                    sender = threading.Thread(target=s.sendall, args=(chunks,))
                sender.start()
                st, head, body = r.response()
                sender.join(10)
                if st != 200 or body != data:
                    self.stats.bad("upload", "status %d len %d want %d" % (st, len(body), n))
                    return
                self.stats.good("upload")
                # An echo whose unread body exceeded --drain-limit when the
                # answer started is announced as the last on the connection.
                if re.search(rb"\r\nconnection:\s*close", head, re.I):
                    return
        finally:
            s.close()

    def hostile(self):
        if self.rng.random() < 0.2:
            # Raw garbage: a 400 or a close, nothing else.
            junk = bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(1, 300)))
            s, r = self.conn()
            try:
                s.sendall(junk + b"\r\n\r\n")
                try:
                    st, _, _ = r.response()
                except (EOFError, ConnectionResetError):
                    self.stats.good("hostile")
                    return
                if 400 <= st < 600:
                    self.stats.good("hostile")
                else:
                    self.stats.bad("hostile", "garbage %r got %d" % (junk[:30], st))
            finally:
                s.close()
            return
        req, want = self.rng.choice(HOSTILE)
        s, r = self.conn()
        try:
            s.sendall(req)
            st, _, _ = r.response()
            if st != want:
                self.stats.bad("hostile", "%r: %d, want %d" % (req[:40], st, want))
            else:
                self.stats.good("hostile")
        finally:
            s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=1800)
    ap.add_argument("--sample", type=float, default=10)
    ap.add_argument("--warmup", type=float, default=None)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/spindle"))
    ap.add_argument("--rss-slack-mb", type=float, default=5)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    warmup = a.warmup if a.warmup is not None else a.duration / 3

    port = free_port()
    err = tempfile.NamedTemporaryFile(prefix="soak-", suffix=".err", delete=False)
    proc = subprocess.Popen([a.bin, "--bind", "127.0.0.1:%d" % port, "--workers", str(a.workers),
                             "--keepalive-timeout", "2", "--header-timeout", "5", "--body-timeout", "5",
                             "--linger-timeout", "0.5", "--graceful-timeout", "2"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                            start_new_session=True)
    checks = []

    def check(name, ok, detail=""):
        checks.append(ok)
        print("%s %s%s" % ("PASS" if ok else "FAIL", name, (": " + detail) if detail else ""), flush=True)

    try:
        addr = ("127.0.0.1", port)
        end = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(addr, timeout=1) as s:
                    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    if s.recv(16).startswith(b"HTTP/1.1 200"):
                        break
            except OSError:
                pass
            if time.monotonic() > end or proc.poll() is not None:
                print("spindle did not start:", open(err.name).read()[-2000:])
                print("0 passed, 1 failed")
                return 1
            time.sleep(0.05)
        workers = children(proc.pid) if a.workers > 0 else [proc.pid]
        while a.workers > 0 and len(workers) < a.workers and time.monotonic() < end:
            time.sleep(0.05)
            workers = children(proc.pid)
        time.sleep(0.5)
        fd0 = {w: nfds(w) for w in workers}

        stats = Stats()
        stop = threading.Event()
        threads = []
        mix = [("keepalive", 3), ("close", 2), ("pipeline", 1), ("slow", 3), ("upload", 2), ("hostile", 2)]
        for i, (kind, n) in enumerate(mix):
            for j in range(n):
                ld = Load(addr, stop, stats, seed=i * 100 + j)
                t = threading.Thread(target=ld.guard, args=(kind, getattr(ld, kind)), daemon=True)
                t.start()
                threads.append(t)

        samples = []
        t0 = time.monotonic()
        while True:
            el = time.monotonic() - t0
            samples.append({"t": round(el, 1),
                            "rss_kb": {w: rss_kb(w) for w in workers},
                            "fds": {w: nfds(w) for w in workers}})
            s = samples[-1]
            print("t=%6.1fs rss_kb=%s fds=%s ok=%d errors=%d" % (
                el, list(s["rss_kb"].values()), list(s["fds"].values()), sum(stats.ok.values()),
                sum(stats.errors.values())), flush=True)
            if el >= a.duration or proc.poll() is not None:
                break
            time.sleep(min(a.sample, max(0.1, a.duration - el)))
        stop.set()
        for t in threads:
            t.join(15)

        # Idle connections close at the keep-alive timeout (2 s).
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline and any(nfds(w) > fd0[w] for w in workers):
            time.sleep(0.2)
        fd_end = {w: nfds(w) for w in workers}

        check("server alive", proc.poll() is None, "exit %s" % proc.returncode)
        now = children(proc.pid) if a.workers > 0 else [proc.pid]
        check("no worker died", now == workers, "started %s, now %s" % (workers, now))
        total_ok = sum(stats.ok.values())
        check("requests served", total_ok > 0, json.dumps(stats.ok, sort_keys=True))
        check("no unintended errors", not stats.errors,
              json.dumps({"errors": stats.errors, "examples": stats.examples}, sort_keys=True))
        after = [s for s in samples if s["t"] >= warmup]
        before = [s for s in samples if s["t"] <= warmup]
        if after and before:
            for w in workers:
                ref = before[-1]["rss_kb"][w]
                peak = max(s["rss_kb"][w] for s in after)
                check("worker %d RSS flat after warm-up" % w,
                      peak - ref <= a.rss_slack_mb * 1024,
                      "at warm-up %d KiB, peak after %d KiB (+%d KiB)" % (ref, peak, peak - ref))
        else:
            check("enough samples", False, "%d samples" % len(samples))
        for w in workers:
            check("worker %d fds back to baseline" % w, fd_end[w] <= fd0[w],
                  "before %d, after %d" % (fd0[w], fd_end[w]))
        errtext = open(err.name, errors="replace").read()
        bad = [m for m in ("AddressSanitizer", "runtime error", "; starting a new one") if m in errtext]
        check("error log clean", not bad, ", ".join(bad) + errtext[-1500:] if bad else "")
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"duration": a.duration, "ok": stats.ok, "errors": stats.errors,
                           "samples": samples, "fd_before": fd0, "fd_after": fd_end}, f, indent=1)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(5)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        os.unlink(err.name)
    passed = sum(1 for c in checks if c)
    failed = len(checks) - passed
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
