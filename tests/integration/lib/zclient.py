"""zclient.py — a raw-socket WebSocket client with permessage-deflate of its
own (Python's zlib, framing written here), for what a well-behaved client
never sends: RSV bits in the wrong places, data that is not DEFLATE, bombs.
It also counts the bytes each way on the wire (test_ws_deflate.py)."""
import base64
import os
import socket
import struct
import zlib

TAIL = b"\x00\x00\xff\xff"


def deflate_params(value):
    """Sec-WebSocket-Extensions' accepted parameters as a dict (None if absent)."""
    if value is None:
        return None
    parts = [p.strip() for p in value.split(";")]
    assert parts[0] == "permessage-deflate", value
    out = {}
    for p in parts[1:]:
        k, _, v = p.partition("=")
        out[k.strip()] = int(v) if v else True
    return out


class ZClient:
    def __init__(self, port, path="/ws", offer="permessage-deflate; client_max_window_bits",
                 timeout=10, client_bits=None):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        ext = "Sec-WebSocket-Extensions: %s\r\n" % offer if offer else ""
        self.s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n%s\r\n"
                        % (path, key, ext)).encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self.s.recv(4096)
            assert chunk, "closed during the handshake: %r" % data
            data += chunk
        head, _, self.buf = data.partition(b"\r\n\r\n")
        self.head = head.decode()
        assert self.head.startswith("HTTP/1.1 101"), self.head
        exts = [l.split(":", 1)[1].strip() for l in self.head.split("\r\n")[1:]
                if l.lower().startswith("sec-websocket-extensions:")]
        assert len(exts) <= 1, exts
        self.ext = exts[0] if exts else None
        self.params = deflate_params(self.ext)
        p = self.params or {}
        self.sbits = p.get("server_max_window_bits", 15)
        # Python's zlib cannot compress with a 256-byte window (as zlib's C API).
        self.cbits = max(9, client_bits or p.get("client_max_window_bits", 15))
        self.inflater = zlib.decompressobj(-self.sbits)
        self.deflater = zlib.compressobj(6, zlib.DEFLATED, -self.cbits)
        self.wire_in = self.wire_out = 0

    def compress(self, data):
        if (self.params or {}).get("client_no_context_takeover"):
            self.deflater = zlib.compressobj(6, zlib.DEFLATED, -self.cbits)
        out = self.deflater.compress(data) + self.deflater.flush(zlib.Z_SYNC_FLUSH)
        assert out.endswith(TAIL)
        return out[:-4]

    def raw_frame(self, op, payload, fin=True, rsv=0):
        b0 = (0x80 if fin else 0) | rsv | op
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", b0, 0x80 | n)
        elif n < 65536:
            head = struct.pack("!BBH", b0, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", b0, 0x80 | 127, n)
        mask = os.urandom(4)
        m = (mask * (n // 4 + 1))[:n]
        body = (int.from_bytes(payload, "big") ^ int.from_bytes(m, "big")).to_bytes(n, "big") if n else b""
        self.s.sendall(head + mask + body)
        self.wire_out += len(head) + 4 + n

    def send(self, data, compress=True, fragment=0):
        """A message, compressed (RSV1 on its first frame) unless told not,
        cut into frames of `fragment` bytes of payload (0: one frame)."""
        op = 1 if isinstance(data, str) else 2
        raw = data.encode() if op == 1 else data
        payload = self.compress(raw) if compress else raw
        pieces = [payload[i:i + fragment] for i in range(0, len(payload), fragment)] if fragment else []
        pieces = pieces or [payload]
        for i, piece in enumerate(pieces):
            self.raw_frame(op if i == 0 else 0, piece, fin=i == len(pieces) - 1,
                           rsv=0x40 if compress and i == 0 else 0)

    def need(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(1 << 16)
            if not chunk:
                raise EOFError("closed with %d of %d bytes" % (len(self.buf), n))
            self.buf += chunk
            self.wire_in += len(chunk)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def frame(self):
        b0, b1 = self.need(2)
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self.need(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self.need(8))[0]
        return b0 & 0x0F, b0 & 0x70, bool(b0 & 0x80), self.need(n)

    def recv(self):
        """The next data message (str or bytes), or ("close", code)."""
        op, rsv, fin, payload = self.frame()
        if op == 8:
            return ("close", struct.unpack("!H", payload[:2])[0] if payload else 1005)
        assert op in (1, 2) and rsv in (0, 0x40), (op, rsv)
        zipped, parts = rsv == 0x40, [payload]
        while not fin:
            cop, crsv, fin, more = self.frame()
            assert cop == 0 and crsv == 0, (cop, crsv)
            parts.append(more)
        data = b"".join(parts)
        if zipped:
            data = self.inflater.decompress(data + TAIL)
            if (self.params or {}).get("server_no_context_takeover"):
                self.inflater = zlib.decompressobj(-self.sbits)
        return data.decode() if op == 1 else data

    def close_code(self):
        """Reads to the server's close frame: its code (data before it skipped)."""
        while True:
            op, _, _, payload = self.frame()
            if op == 8:
                return struct.unpack("!H", payload[:2])[0] if payload else 1005

    def close(self):
        self.s.close()
