"""h2util.py — helpers of the test_h2_* suites: a spindle started once per
module (lib.server.Server, stopped by its PID, checked for sanitizer
reports), a raw HTTP/2 client that crafts frames with hyperframe and header
blocks with hpack (and bytes by hand for the malformed ones hyperframe will
not build), and a well-behaved client on python3-h2.
"""
import socket
import ssl
import struct
import time

import h2.config
import h2.connection
import h2.events
import pytest
from hpack import Decoder, Encoder
from hyperframe.frame import (ContinuationFrame, DataFrame, Frame, GoAwayFrame, HeadersFrame,
                              RstStreamFrame, SettingsFrame, WindowUpdateFrame)

from lib.proctools import free_port, start_on_free_port

from lib.server import FAST, PROCESS_FLAGS, Server, stop_servers

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

# RFC 9113 §7
NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR = 0x0, 0x1, 0x2, 0x3
STREAM_CLOSED, FRAME_SIZE_ERROR, REFUSED_STREAM, CANCEL = 0x5, 0x6, 0x7, 0x8
COMPRESSION_ERROR, ENHANCE_YOUR_CALM = 0x9, 0xb

# frame types (RFC 9113 §6)
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, \
    CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS, PADDED, PRIO = 0x1, 0x1, 0x4, 0x8, 0x20


def start(tmp_path_factory, *flags, fast=True):
    """A spindle on a free port with flags; returns (server, stop)."""
    tmp = tmp_path_factory.mktemp("h2")
    servers = []

    def once():
        port = free_port()
        b = "127.0.0.1:%d" % port
        args = ["--bind", b] + PROCESS_FLAGS + (FAST if fast else []) + list(flags)
        srv = Server(args, str(tmp / ("spindle-%d.err" % len(servers))), [b], port)
        srv.host = "127.0.0.1"
        servers.append(srv)
        return srv

    def discard(srv):
        srv.stop()
        servers.remove(srv)

    srv = start_on_free_port(once, Server.wait_ready, discard)

    def stop():
        problems = stop_servers(servers)
        if problems:
            pytest.fail("\n\n".join(problems), pytrace=False)
    return srv, stop


def raw_frame(ftype, flags, sid, payload=b""):
    """A frame's bytes as given, valid or not."""
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", sid) + payload


class Raw:
    """One HTTP/2 connection from frames up. Every read has a deadline."""

    def __init__(self, port, preface=True, settings=(), timeout=3.0, sock=None):
        """sock: a connection made already (a TLS one, "h2" chosen by ALPN)."""
        self.sock = sock or socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.enc = Encoder()
        self.dec = Decoder()
        self.buf = b""
        self.block_in = b""
        self.eof = False
        self.next_id = 1
        if preface:
            sf = SettingsFrame(0)
            sf.settings = dict(settings)
            self.sock.sendall(PREFACE + sf.serialize())

    def close(self):
        self.sock.close()

    def send(self, *frames):
        data = b"".join(f if isinstance(f, bytes) else f.serialize() for f in frames)
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass  # the server closed (over TLS too): what it said before is still to be read

    def block(self, headers):
        return self.enc.encode(headers)

    def req_headers(self, path="/", method="GET", extra=(), authority="localhost"):
        h = [(":method", method), (":scheme", "http"), (":path", path)]
        if authority is not None:
            h.append((":authority", authority))
        return h + list(extra)

    def headers(self, sid=None, headers=None, end_stream=True, end_headers=True, **kw):
        """Sends one HEADERS frame (a request for "/" by default); returns its stream id."""
        if sid is None:
            sid = self.next_id
        self.next_id = max(self.next_id, sid + 2)
        f = HeadersFrame(sid)
        f.data = self.block(headers if headers is not None else self.req_headers(**kw))
        f.flags = set((["END_STREAM"] if end_stream else []) + (["END_HEADERS"] if end_headers else []))
        self.send(f)
        return sid

    def data(self, sid, payload, end_stream=False):
        f = DataFrame(sid)
        f.data = payload
        if end_stream:
            f.flags.add("END_STREAM")
        self.send(f)

    def window_update(self, sid, n):
        f = WindowUpdateFrame(sid)
        f.window_increment = n
        self.send(f)

    def recv(self, timeout=3.0):
        """The next frame, or None at end of stream or after timeout."""
        end = time.monotonic() + timeout
        while True:
            if len(self.buf) >= 9:
                length = int.from_bytes(self.buf[:3], "big")
                if len(self.buf) >= 9 + length:
                    f, _ = Frame.parse_frame_header(memoryview(self.buf[:9]))
                    f.parse_body(memoryview(self.buf[9:9 + length]))
                    self.buf = self.buf[9 + length:]
                    if isinstance(f, SettingsFrame) and "ACK" not in f.flags:
                        self.send(raw_frame(SETTINGS, ACK, 0))
                    if isinstance(f, (HeadersFrame, ContinuationFrame)):
                        # decoded at once, so the HPACK table never falls behind
                        self.block_in += f.data
                        if "END_HEADERS" in f.flags:
                            f.fields = [(k.decode() if isinstance(k, bytes) else k,
                                         v.decode() if isinstance(v, bytes) else v)
                                        for k, v in self.dec.decode(self.block_in)]
                            self.block_in = b""
                    return f
            left = end - time.monotonic()
            if self.eof or left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                return None
            except (ConnectionResetError, ssl.SSLError):
                chunk = b""
            if not chunk:
                self.eof = True
            self.buf += chunk

    def until(self, pred, timeout=3.0):
        """Frames up to the first for which pred is true (that one last), or
        all there were until end of stream or the timeout."""
        end = time.monotonic() + timeout
        out = []
        while True:
            f = self.recv(max(0.0, end - time.monotonic()))
            if f is None:
                return out
            out.append(f)
            if pred(f):
                return out

    def goaway(self, timeout=3.0):
        """The GOAWAY the server sends, or None if it closed (or went silent) without one."""
        fs = self.until(lambda f: isinstance(f, GoAwayFrame), timeout)
        return fs[-1] if fs and isinstance(fs[-1], GoAwayFrame) else None

    def reset_code(self, sid, timeout=3.0):
        """The error code of the RST_STREAM for sid, or None."""
        fs = self.until(lambda f: isinstance(f, (RstStreamFrame, GoAwayFrame)) and
                        (isinstance(f, GoAwayFrame) or f.stream_id == sid), timeout)
        if fs and isinstance(fs[-1], RstStreamFrame):
            return fs[-1].error_code
        return None

    def closed(self, timeout=3.0):
        """True if the server closes the connection within timeout."""
        end = time.monotonic() + timeout
        while not self.eof and time.monotonic() < end:
            self.recv(max(0.0, end - time.monotonic()))
        return self.eof

    def response(self, sid, timeout=3.0, window=True):
        """(headers dict, body bytes, reset code or None) of stream sid; with
        window, WINDOW_UPDATEs give back what the body took."""
        hdrs, body = {}, b""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            f = self.recv(max(0.0, end - time.monotonic()))
            if f is None:
                break
            if f.stream_id != sid:
                continue
            if isinstance(f, (HeadersFrame, ContinuationFrame)):
                if "END_HEADERS" in f.flags:
                    hdrs.update(dict(f.fields))
            elif isinstance(f, DataFrame):
                body += f.data
                if window and f.flow_controlled_length:
                    self.window_update(0, f.flow_controlled_length)
                    self.window_update(sid, f.flow_controlled_length)
            elif isinstance(f, RstStreamFrame):
                return hdrs, body, f.error_code
            if "END_STREAM" in f.flags:
                return hdrs, body, None
        return hdrs, body, "timeout"


def ended_despite_pings(r, ids, timeout=4.0):
    """Sends a PING every 0.25 s (each one a frame read) until every stream
    of ids is reset or the connection gets a GOAWAY; returns the ids ended."""
    ended, end = set(), time.monotonic() + timeout
    while not ended >= set(ids) and time.monotonic() < end and not r.eof:
        r.send(raw_frame(PING, 0, 0, b"\0" * 8))
        for f in r.until(lambda f: False, timeout=0.25):
            if isinstance(f, RstStreamFrame):
                ended.add(f.stream_id)
            elif isinstance(f, GoAwayFrame):
                ended.update(ids)
    return ended


def h2_client(port, timeout=5.0, tls=None):
    """A python3-h2 client connection: (socket, H2Connection), preface sent;
    over TLS when tls is an SSLContext (offering "h2" by ALPN)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    if tls is not None:
        s = tls.wrap_socket(s, server_hostname="localhost")
        assert s.selected_alpn_protocol() == "h2"
    c = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True,
                                                                     header_encoding="utf-8"))
    c.initiate_connection()
    s.sendall(c.data_to_send())
    return s, c


def h2_requests(port, reqs, timeout=5.0, tls=None, authority="localhost", header_list=False):
    """Sends every (method, path, headers, body) on one connection at once;
    returns [(status, headers dict — or list of pairs with header_list —,
    body)] in order."""
    s, c = h2_client(port, timeout, tls)
    ids = []
    pending = {}  # sid -> body bytes not sent yet (flow control)
    for method, path, extra, body in reqs:
        sid = c.get_next_available_stream_id()
        hdrs = [(":method", method), (":scheme", "http"), (":path", path),
                (":authority", authority)] + list(extra)
        c.send_headers(sid, hdrs, end_stream=not body)
        if body:
            pending[sid] = body
        ids.append(sid)

    def push():
        for sid in list(pending):
            body = pending[sid]
            n = min(len(body), c.local_flow_control_window(sid), c.max_outbound_frame_size)
            while n > 0:
                c.send_data(sid, body[:n], end_stream=n == len(body))
                body = body[n:]
                n = min(len(body), c.local_flow_control_window(sid), c.max_outbound_frame_size)
            if body:
                pending[sid] = body
            else:
                del pending[sid]
        s.sendall(c.data_to_send())
    push()
    out = {sid: [None, {}, b""] for sid in ids}
    done = set()
    end = time.monotonic() + timeout
    while len(done) < len(ids) and time.monotonic() < end:
        s.settimeout(max(0.01, end - time.monotonic()))
        try:
            data = s.recv(65536)
        except (socket.timeout, ssl.SSLError):
            break
        if not data:
            break
        for ev in c.receive_data(data):
            if isinstance(ev, h2.events.ResponseReceived):
                h = dict(ev.headers)
                out[ev.stream_id][0] = int(h[":status"])
                out[ev.stream_id][1] = list(ev.headers) if header_list else h
            elif isinstance(ev, h2.events.DataReceived):
                out[ev.stream_id][2] += ev.data
                c.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, (h2.events.StreamEnded, h2.events.StreamReset)):
                done.add(ev.stream_id)
                pending.pop(ev.stream_id, None)
        push()
    s.close()
    return [tuple(out[sid]) for sid in ids]


def h2_get(port, path="/", extra=(), timeout=5.0):
    return h2_requests(port, [("GET", path, extra, b"")], timeout)[0]
