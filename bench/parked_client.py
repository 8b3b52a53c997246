"""parked_client.py — the many-clients side of bench/run's parked workload
(bench/parked.sh): N WebSockets and/or N long-polling clients on one
non-blocking selectors (epoll) loop,
against examples/chat. Every "online" announcement carries the server's
wall-clock "ts"; each client notes (receive time - ts), and per broadcast we
report how many clients got it and the slowest one (the time to deliver it
to all, client processing included). Prints READY once every client is
parked, then a JSON summary on stdout after --seconds more.
    parked_client.py --port P [--ws N] [--poll N] [--seconds S]"""
import argparse
import base64
import errno
import json
import os
import selectors
import socket
import sys
import time

sel = selectors.DefaultSelector()


def now_ms():
    return time.time() * 1000.0


class Client:
    def __init__(self, kind, addr):
        self.kind = kind
        self.s = socket.socket()
        self.s.setblocking(False)
        self.buf = b""
        self.upgraded = False
        self.since = None
        self.parked = False
        rc = self.s.connect_ex(addr)
        if rc not in (0, errno.EINPROGRESS):
            raise OSError(rc, os.strerror(rc))
        self.out = self.first_request()
        sel.register(self.s, selectors.EVENT_READ | selectors.EVENT_WRITE, self)

    def first_request(self):
        if self.kind == "ws":
            key = base64.b64encode(os.urandom(16)).decode()
            # Bus ids start with the wall clock's ms: since now, no history
            # (the uvicorn peer sends none on a WebSocket either).
            return ("GET /ws?since=%d-0 HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                    "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13"
                    "\r\n\r\n" % (time.time() * 1000, key)).encode()
        return b"GET /poll HTTP/1.1\r\nHost: x\r\n\r\n"

    def poll_request(self):
        return ("GET /poll?since=%s HTTP/1.1\r\nHost: x\r\n\r\n" % self.since).encode()


def id_key(i):
    """A message's id as a tuple that sorts as the ids do: spindle's chat
    gives bus ids ("MS-SEQ"), the uvicorn peer numbers (its "seq")."""
    if isinstance(i, int):
        return (i, 0)
    ms, _, seq = i.partition("-")
    return (int(ms), int(seq or 0))


def msg_id(d):
    return d["id"] if "id" in d else d["seq"]


def on_messages(msgs, t, stats):
    for m in msgs:
        if m.get("type") == "online":
            st = stats.setdefault(id_key(msg_id(m)), [0, 0.0, []])
            st[0] += 1
            lat = t - m["ts"]
            st[1] = max(st[1], lat)
            st[2].append(lat)


def handle_ws(c, t, stats, counts):
    if not c.upgraded:
        if b"\r\n\r\n" not in c.buf:
            return
        head, _, c.buf = c.buf.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise OSError("ws refused: %r" % head[:40])
        c.upgraded = True
        counts["ready"] += 1
    msgs = []
    while len(c.buf) >= 2:
        n = c.buf[1] & 0x7F
        off = 2
        if n == 126:
            if len(c.buf) < 4:
                break
            n = int.from_bytes(c.buf[2:4], "big")
            off = 4
        elif n == 127:
            if len(c.buf) < 10:
                break
            n = int.from_bytes(c.buf[2:10], "big")
            off = 10
        if len(c.buf) < off + n:
            break
        op = c.buf[0] & 0x0F
        if op == 1:
            msgs.append(json.loads(c.buf[off:off + n]))
        elif op == 9:  # the server's keep-alive ping: answered, or closed as idle
            c.s.send(bytes([0x8A, 0x80 | n]) + b"\0\0\0\0" + c.buf[off:off + n])
        elif op == 8:
            raise OSError("ws closed by the server")
        c.buf = c.buf[off + n:]
    on_messages(msgs, t, stats)


def handle_poll(c, t, stats, counts):
    while b"\r\n\r\n" in c.buf:
        head, _, rest = c.buf.partition(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v)
        if len(rest) < length:
            return
        body, c.buf = rest[:length], rest[length:]
        if status == 200:
            d = json.loads(body)
            on_messages(d["messages"], t, stats)
            c.since = msg_id(d)
        elif status != 204:
            raise OSError("poll answered %d" % status)
        if c.since is None:  # nothing yet: from the start
            c.since = "0"
        c.out += c.poll_request()
        sel.modify(c.s, selectors.EVENT_READ | selectors.EVENT_WRITE, c)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ws", type=int, default=0)
    ap.add_argument("--poll", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--go", action="store_true", help="start the --seconds at a line on stdin")
    a = ap.parse_args()
    if a.go:
        os.set_blocking(sys.stdin.fileno(), False)
        sel.register(sys.stdin.fileno(), selectors.EVENT_READ, None)
    addr = (a.host, a.port)
    todo = ["ws"] * a.ws + ["poll"] * a.poll
    total = len(todo)
    counts = {"ready": 0, "errors": 0}
    stats = {}
    clients = []
    ready_at = None
    end = None
    go = not a.go
    t_start = time.monotonic()
    while True:
        # open the next batch once the previous ones are mostly through
        if todo and len(clients) - counts["ready"] < a.batch:
            for _ in range(min(a.batch, len(todo))):
                try:
                    clients.append(Client(todo.pop(), addr))
                except OSError as e:
                    counts["errors"] += 1
                    print("connect: %s" % e, file=sys.stderr)
        for key, ev in sel.select(0.05):
            c = key.data
            if c is None:  # --go: the harness says every client process is ready
                os.read(sys.stdin.fileno(), 4096)  # a line, or end of file: go either way
                sel.unregister(sys.stdin.fileno())
                go = True
                continue
            try:
                if ev & selectors.EVENT_WRITE and c.out:
                    n = c.s.send(c.out)
                    c.out = c.out[n:]
                    if not c.out:
                        sel.modify(c.s, selectors.EVENT_READ, c)
                        if c.kind == "poll" and not c.parked:  # its first poll is out
                            c.parked = True
                            counts["ready"] += 1
                if ev & selectors.EVENT_READ:
                    data = c.s.recv(65536)
                    if not data:
                        raise OSError("closed by the server")
                    c.buf += data
                    t = now_ms()
                    (handle_ws if c.kind == "ws" else handle_poll)(c, t, stats, counts)
            except (OSError, ValueError) as e:
                counts["errors"] += 1
                if counts["errors"] < 10:
                    print("%s client: %s" % (c.kind, e), file=sys.stderr)
                sel.unregister(c.s)
                c.s.close()
        if ready_at is None and counts["ready"] + counts["errors"] >= total:
            ready_at = time.monotonic()
            print("READY %d %.1f" % (counts["ready"], ready_at - t_start), flush=True)
        if ready_at is not None and end is None and go:
            end = time.monotonic() + a.seconds
            first_seq = max(stats) if stats else (0, 0)
        if end and time.monotonic() >= end:
            break
        if ready_at is not None and end is None and time.monotonic() - ready_at > 180:
            print("no go line on stdin 180 s after READY", file=sys.stderr)
            break
        if ready_at is None and time.monotonic() - t_start > 120:
            print("not all clients ready after 120 s", file=sys.stderr)
            break
    # broadcasts that started after everyone was parked and had time to arrive
    rows = []
    for seq in sorted(stats):
        if end is None or seq <= first_seq:
            continue
        n, worst, lats = stats[seq]
        lats.sort()
        rows.append({"seq": "%d-%d" % seq, "clients": n, "max_ms": round(worst, 1),
                     "p50_ms": round(lats[len(lats) // 2], 1)})
    if rows and rows[-1]["clients"] < counts["ready"]:
        rows.pop()  # the last one may have been cut off by the end of the run
    print(json.dumps({"ready": counts["ready"], "errors": counts["errors"],
                      "connect_s": round((ready_at or time.monotonic()) - t_start, 2),
                      "broadcasts": rows}), flush=True)


if __name__ == "__main__":
    main()
