"""The Redis session store pipelines a group of calls (session_redis.c,
session_writes.c): loads and writes made at once leave in one send and
their replies are read after. Against a small RESP server of the test's own, which
counts the commands each read brings, answers a batch only after a pause
(so that writes pile up behind it) and refuses a SET whose value holds
"poison": the group is then run again write by write, and only that
visitor gets the error."""
import concurrent.futures
import socket
import threading
import time

import pytest

from lib.proctools import free_port
from lib.sessutil import APP, sid_of, visit


class FakeRedis:
    """SET, GET, DEL (and +OK to anything else) over RESP on 127.0.0.1."""

    def __init__(self, pause=0.02):
        self.port = free_port()
        self.pause = pause
        self.first_pause = pause  # the first batch's: callers queue behind it
        self.data = {}
        self.batches = []  # commands per read that held at least one
        self.gets = []  # GETs per such read
        self.refused_in = []  # the size of each batch that held a refused SET
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", self.port))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.stopping = False
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self):
        while not self.stopping:
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            t = threading.Thread(target=self._serve, args=(c,), daemon=True)
            self.threads.append(t)
            t.start()

    @staticmethod
    def _parse(buf):
        """The complete commands at buf's start, and the bytes left."""
        cmds = []
        while True:
            if not buf.startswith(b"*") or b"\r\n" not in buf:
                return cmds, buf
            head, rest = buf.split(b"\r\n", 1)
            args = []
            for _ in range(int(head[1:])):
                if b"\r\n" not in rest:
                    return cmds, buf
                ln, tail = rest.split(b"\r\n", 1)
                n = int(ln[1:])
                if len(tail) < n + 2:
                    return cmds, buf
                args.append(tail[:n])
                rest = tail[n + 2:]
            cmds.append(args)
            buf = rest

    def _reply(self, args):
        name = args[0].upper()
        with self.lock:
            if name == b"SET":
                if b"poison" in args[2]:
                    return b"-ERR refused by the test\r\n"
                self.data[args[1]] = args[2]
                return b"+OK\r\n"
            if name == b"GET":
                v = self.data.get(args[1])
                return b"$-1\r\n" if v is None else b"$%d\r\n%s\r\n" % (len(v), v)
            if name == b"DEL":
                return b":%d\r\n" % (self.data.pop(args[1], None) is not None)
        return b"+OK\r\n"

    def _serve(self, c):
        buf = b""
        with c:
            while not self.stopping:
                try:
                    got = c.recv(1 << 20)
                except OSError:
                    return
                if not got:
                    return
                buf += got
                cmds, buf = self._parse(buf)
                if not cmds:
                    continue
                with self.lock:
                    self.batches.append(len(cmds))
                    self.gets.append(sum(1 for a in cmds if a[0].upper() == b"GET"))
                    pause, self.first_pause = self.first_pause, self.pause
                time.sleep(pause)  # a slow Redis: the next calls queue up
                replies = [self._reply(a) for a in cmds]
                if any(r.startswith(b"-") for r in replies):
                    with self.lock:
                        self.refused_in.append(len(cmds))
                c.sendall(b"".join(replies))

    def stop(self):
        self.stopping = True
        self.sock.close()


@pytest.fixture
def fake_redis():
    r = FakeRedis()
    yield r
    r.stop()


@pytest.fixture
def redis_sessions(spindle, monkeypatch, tmp_path, fake_redis):
    secret = tmp_path / "secret"
    secret.write_text("0123456789abcdef0123456789abcdef\n")
    monkeypatch.setenv("SESSIONS_STORE", "redis://127.0.0.1:%d" % fake_redis.port)
    monkeypatch.setenv("SESSIONS_SECRET", str(secret))
    return spindle("--app", APP, "--workers", "1")


def test_calls_made_at_once_go_in_one_send(redis_sessions, fake_redis):
    with concurrent.futures.ThreadPoolExecutor(40) as ex:
        first = list(ex.map(lambda i: visit(redis_sessions, "/set?k=n&v=v%d" % i), range(80)))
        assert [v.status for v in first] == [200] * 80, first
        names = list(ex.map(lambda v: visit(redis_sessions, "/get?k=n", cookie="spindle_sid=" + sid_of(v)),
                            first))
    assert [v.fields.get("n") for v in names] == ["v%d" % i for i in range(80)], names
    sets = sum(1 for k in fake_redis.data if k.startswith(b"spindle:session:"))
    assert sets == 80, sets
    # Without pipelining each SET waits for its reply before the next is
    # sent: no read would ever hold two. The visitors' loads (GET) too.
    assert max(fake_redis.batches) >= 5, fake_redis.batches
    assert max(fake_redis.gets) >= 5, fake_redis.gets


def test_a_refused_write_in_a_group_fails_alone(redis_sessions, fake_redis):
    # A first write waits 0.5 s in Redis: the 24 visits sent meanwhile, the
    # poisoned one among them, queue behind it and go in the next group.
    fake_redis.first_pause = 0.5
    values = ["ok%d" % i for i in range(24)]
    values[11] = "poison"
    with concurrent.futures.ThreadPoolExecutor(25) as ex:
        first = ex.submit(visit, redis_sessions, "/set?k=n&v=first")
        time.sleep(0.1)
        got = list(ex.map(lambda v: visit(redis_sessions, "/set?k=n&v=" + v), values))
        assert first.result().status == 200
    assert [v.status for v in got] == [500 if v == "poison" else 200 for v in values], got
    stored = sorted(v for k, v in fake_redis.data.items() if k.startswith(b"spindle:session:"))
    assert len(stored) == 24 and not any(b"poison" in v for v in stored), stored
    assert "refused SET" in redis_sessions.stderr()
    # Refused inside a group, then once more alone (the group run again
    # call by call).
    assert max(fake_redis.refused_in) >= 2 and 1 in fake_redis.refused_in, fake_redis.refused_in
