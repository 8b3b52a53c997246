"""ws_client.py — drives spindle's WebSocket test app (tests/fixtures/c/app_ws.c)
with a real client, PyPI's `websockets` (the version requirements.txt pins):
`run(url, scenario, ssl=None)` plays one scenario and returns its detail,
raising AssertionError when the server did something else. Every wait is
bounded (the whole scenario by TIMEOUT)."""
import asyncio

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.frames import Opcode

TIMEOUT = 20
MAX = 8 << 20  # the largest echo is 1 MiB; the server's own limit is what is tested


class PingRecorder(ClientConnection):
    """A client connection that also keeps the payloads of the pings it was
    sent (websockets answers them itself and tells nobody)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.pings_seen = asyncio.Queue()

    def process_event(self, event):
        if getattr(event, "opcode", None) is Opcode.PING:  # the handshake comes first
            self.pings_seen.put_nowait(bytes(event.data))
        super().process_event(event)


def _open(url, ssl):
    # No compression: the scenarios are about framing (permessage-deflate
    # has its own tests, test_ws_deflate.py).
    return connect(url, ssl=ssl, max_size=MAX, compression=None, ping_interval=None,
                   open_timeout=5, close_timeout=5, create_connection=PingRecorder)


async def _closed(ws):
    """The close the server sent: (code, reason)."""
    await asyncio.wait_for(ws.wait_closed(), 10)
    rcvd = ws.protocol.close_rcvd
    return (rcvd.code, rcvd.reason) if rcvd else (None, None)


async def sizes(ws):
    for n in (0, 1, 125, 126, 127, 65535, 65536, 100000, 1 << 20):
        data = bytes((i * 13) & 0xFF for i in range(n))
        await ws.send(data)
        got = await ws.recv()
        assert isinstance(got, bytes) and got == data, "binary %d: got %d bytes" % (n, len(got))
        text = "é" * (n // 2) + ("a" if n % 2 else "")
        await ws.send(text)
        got = await ws.recv()
        assert isinstance(got, str) and got == text, "text %d" % n
    await ws.close(1000)
    code, _ = await _closed(ws)
    assert code == 1000, code
    return "9 sizes each way"


async def fragmented(ws):
    """A text message in fragments with a character split between two of
    them and a ping between fragments; then binary in 1000 fragments."""
    whole = "héllo wörld 😀 and more".encode()
    cuts = [0, 2, 3, 14, 16, len(whole)]
    pong = []

    async def pieces():
        for i in range(len(cuts) - 1):
            if i == 2:
                pong.append(await ws.ping(b"between"))
            yield whole[cuts[i]:cuts[i + 1]]

    await ws.send(pieces(), text=True)
    got = await ws.recv()
    assert got == whole.decode(), got
    await asyncio.wait_for(pong[0], 5)  # answered, with our payload
    big = bytes([7]) * 100000
    await ws.send(big[i * 100:(i + 1) * 100] for i in range(1000))
    got = await ws.recv()
    assert got == big, "binary fragments: %d bytes" % len(got)
    await ws.close(1000)
    await _closed(ws)
    return "text in 5, binary in 1000"


async def pings(ws):
    """Our ping is answered with our data; the server's ping reaches us."""
    await asyncio.wait_for(await ws.ping(b"abc"), 5)
    await ws.send("ping")
    seen = await asyncio.wait_for(ws.pings_seen.get(), 5)
    assert seen == b"hello", seen
    await ws.send("still there")
    got = await ws.recv()
    assert got == "still there", got
    await ws.close(1000)
    await _closed(ws)
    return "pong abc, server ping %r" % seen


async def close_by_client(ws):
    await ws.close(4001, "client says bye")
    code, _ = await _closed(ws)
    assert code == 4001, code
    return "echoed 4001"


async def close_by_server(ws):
    await ws.send("close")
    code, reason = await _closed(ws)
    assert (code, reason) == (1000, "bye"), (code, reason)
    return "1000 bye"


async def concurrent_senders(ws):
    """Another coroutine in the server sends 500 messages while the handler
    echoes ours: whole frames, each stream in order."""
    await ws.send("spam 500")
    for i in range(200):
        await ws.send(str(i))
    spam, echo, spamming = [], [], False
    while len(spam) < 500 or len(echo) < 200:
        s = await ws.recv()
        if s == "spamming":
            spamming = True
        elif s.startswith("spam "):
            spam.append(int(s[5:]))
        else:
            echo.append(int(s))
    assert spamming
    assert spam == list(range(500)), spam[:20]
    assert echo == list(range(200)), echo[:20]
    await ws.close(1000)
    await _closed(ws)
    return "500 + 200 in order"


async def _send_refused(ws, message):
    """Sends what the server may refuse part-way: its close cuts the send."""
    try:
        await ws.send(message)
    except ConnectionClosed:
        pass


async def too_big(ws):
    """A message over the server's 1 MiB limit: 1009."""
    await _send_refused(ws, bytes((1 << 20) + 1))
    code, _ = await _closed(ws)
    assert code == 1009, code
    return "1009"


async def too_big_fragmented(ws):
    piece = bytes(1 << 18)
    await _send_refused(ws, (piece for _ in range(5)))
    code, _ = await _closed(ws)
    assert code == 1009, code
    return "1009 over fragments"


SCENARIOS = {f.__name__: f for f in (sizes, fragmented, pings, close_by_client, close_by_server,
                                     concurrent_senders, too_big, too_big_fragmented)}


def run(url, scenario, ssl=None):
    """Plays SCENARIO against URL (ws:// or wss:// with an SSLContext)."""
    async def main():
        async with _open(url, ssl) as ws:
            return await SCENARIOS[scenario](ws)
    return asyncio.run(asyncio.wait_for(main(), TIMEOUT))
