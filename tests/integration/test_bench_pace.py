"""build/bench/pace, the open-loop load generator of bench/run's latency
workload: it keeps its rate, and it charges a server's stall to every
request scheduled during it (no coordinated omission), which a closed-loop
generator would hide."""
import asyncio
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from lib.proctools import ServerProcess, connect_probe, free_port

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
PACE = os.path.join(ROOT, "build", "bench", "pace")
SPINDLE = os.path.join(ROOT, "build", "spindle")


def run_pace(port, conns, rate, secs):
    out = subprocess.run([PACE, str(port), str(conns), str(rate), str(secs)], capture_output=True, text=True,
                         timeout=secs + 30)
    assert out.returncode == 0, out.stderr
    m = re.search(r"^BENCH (.*)$", out.stdout, re.M)
    assert m, out.stdout + out.stderr
    return {k: float(v) for k, v in (kv.split("=") for kv in m.group(1).split())}


def test_pace_keeps_its_rate_against_spindle():
    port = free_port()
    srv = ServerProcess([SPINDLE, "--bind", "127.0.0.1:%d" % port, "--workers", "0", "--log-level", "warning"],
                        port=port, new_session=False)
    try:
        srv.wait_until(lambda: connect_probe(srv.addr, 0.2), 5, step=0.05)
        f = run_pace(port, 10, 1000, 2)
    finally:
        srv.stop(grace=10)
    assert 1900 <= f["requests"] <= 2010
    assert f["connect"] + f["read"] + f["write"] + f["status"] + f["timeout"] == 0
    assert 0 < f["p50"] <= f["p90"] <= f["p99"] <= f["p999"] <= f["max"]
    assert f["p50"] < 50000  # µs: a hello world on loopback


class StallingServer:
    """asyncio keep-alive server answering at once, except that request
    number STALL_AT blocks its whole event loop for STALL seconds."""
    STALL_AT, STALL = 300, 0.5

    def __init__(self):
        self.port = free_port()
        self.count = 0
        self.ready = threading.Event()
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.run, daemon=True).start()
        assert self.ready.wait(5)

    async def handle(self, reader, writer):
        try:
            while await reader.readuntil(b"\r\n\r\n"):
                self.count += 1
                if self.count == self.STALL_AT:
                    time.sleep(self.STALL)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    def run(self):
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self.handle, "127.0.0.1", self.port))
        self.ready.set()
        self.loop.run_until_complete(server.serve_forever())


def test_a_stall_is_charged_to_every_request_scheduled_during_it():
    srv = StallingServer()
    f = run_pace(srv.port, 10, 1000, 2)
    # About 500 of the 2,000 requests were due during the 0.5 s stall, and
    # waited on average 0.25 s: well over 10 % of them above 100 ms. A
    # closed loop would have charged it to the 10 in flight (0.5 %).
    assert f["requests"] >= 1800
    assert f["p90"] >= 100000, f
    assert f["max"] >= 400000, f


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
