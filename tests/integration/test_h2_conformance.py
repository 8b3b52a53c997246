"""test_h2_conformance.py — spindle's HTTP/2 (h2c, prior knowledge) against
RFC 9113, one class per section: frames crafted with hyperframe and hpack
(or by hand when malformed), the server's answer checked frame by frame —
which stream or connection error, with which code.
"""
import socket
import time

import pytest
from hyperframe.frame import (DataFrame, GoAwayFrame, HeadersFrame, PingFrame, RstStreamFrame,
                              SettingsFrame, WindowUpdateFrame)

from lib.h2util import (ACK, CONTINUATION, DATA, END_HEADERS, END_STREAM, FLOW_CONTROL_ERROR,
                    FRAME_SIZE_ERROR, GOAWAY, HEADERS, PADDED, PING, PREFACE, PRIO, PRIORITY,
                    PROTOCOL_ERROR, PUSH_PROMISE, RST_STREAM, SETTINGS, STREAM_CLOSED,
                    WINDOW_UPDATE, COMPRESSION_ERROR, Raw, h2_get, raw_frame, start)


@pytest.fixture(scope="module")
def port(tmp_path_factory):
    srv, stop = start(tmp_path_factory)
    yield srv.port
    stop()


def conn_error(port, *frames, preface=True):
    """Sends frames on a fresh connection; the GOAWAY's code (None if none)."""
    r = Raw(port, preface=preface)
    r.send(*frames)
    g = r.goaway()
    r.close()
    return g.error_code if g else None


def served(port):
    """The server still answers a new connection."""
    status, _, body = h2_get(port)
    return status == 200 and body == b"Hello world!"


class TestSec3_4_Preface:
    def test_server_preface_is_settings_first(self, port):
        r = Raw(port)
        f = r.recv()
        assert isinstance(f, SettingsFrame) and "ACK" not in f.flags
        assert f.settings[SettingsFrame.MAX_CONCURRENT_STREAMS] == 100

    def test_bad_preface_closes(self, port):
        s = socket.create_connection(("127.0.0.1", port), timeout=3)
        s.sendall(b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n" + raw_frame(SETTINGS, 0, 0))
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        assert b"HTTP/1.1" not in data  # not answered as a (strange) HTTP/1.1 request
        assert served(port)

    def test_first_frame_not_settings_is_protocol_error(self, port):
        r = Raw(port, preface=False)
        r.send(PREFACE + raw_frame(PING, 0, 0, b"\0" * 8))
        g = r.goaway()
        assert g is not None and g.error_code == PROTOCOL_ERROR

    def test_http11_still_served_on_the_same_listener(self, port):
        s = socket.create_connection(("127.0.0.1", port), timeout=3)
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        assert data.startswith(b"HTTP/1.1 200") and data.endswith(b"Hello world!")


class TestSec4_Frames:
    def test_unknown_frame_type_ignored(self, port):  # §4.1, §5.5
        r = Raw(port)
        r.send(raw_frame(0xfa, 0xff, 0, b"whatever"))
        sid = r.headers()
        h, body, rst = r.response(sid)
        assert h[":status"] == "200" and body == b"Hello world!" and rst is None

    def test_frame_over_max_frame_size(self, port):  # §4.2
        assert conn_error(port, raw_frame(PING, 0, 0, b"\0" * 16385)) == FRAME_SIZE_ERROR

    def test_bad_header_block_is_compression_error(self, port):  # §4.3
        assert conn_error(port, raw_frame(HEADERS, END_STREAM | END_HEADERS, 1, b"\xff\xff\xff\xff")) \
            == COMPRESSION_ERROR


class TestSec5_1_StreamStates:
    def test_even_stream_id_from_client(self, port):  # §5.1.1
        r = Raw(port)
        r.headers(sid=2)
        g = r.goaway()
        assert g is not None and g.error_code == PROTOCOL_ERROR

    def test_stream_id_must_increase(self, port):  # §5.1.1
        r = Raw(port)
        r.response(r.headers(sid=5))
        r.headers(sid=3)
        g = r.goaway()
        assert g is not None and g.error_code == PROTOCOL_ERROR

    def test_data_on_idle_stream(self, port):  # §5.1 idle
        assert conn_error(port, raw_frame(DATA, 0, 1, b"x")) == PROTOCOL_ERROR

    def test_data_after_end_stream_is_stream_closed(self, port):  # §5.1 half-closed (remote)
        r = Raw(port)
        sid = r.headers(path="/sleep?ms=300")  # still open on our side while it sleeps
        r.data(sid, b"late")
        fs = r.until(lambda f: isinstance(f, (RstStreamFrame, GoAwayFrame)))
        assert fs and fs[-1].error_code == STREAM_CLOSED

    def test_rst_stream_on_idle_stream(self, port):  # §6.4, §5.1 idle
        assert conn_error(port, raw_frame(RST_STREAM, 0, 1, b"\0\0\0\x08")) == PROTOCOL_ERROR

    def test_client_reset_stream_then_others_go_on(self, port):  # §5.1 closed
        r = Raw(port)
        sid = r.headers(path="/sleep?ms=200")
        r.send(raw_frame(RST_STREAM, 0, sid, b"\0\0\0\x08"))
        sid2 = r.headers()
        h, body, rst = r.response(sid2)
        assert h[":status"] == "200" and body == b"Hello world!"

    def test_push_promise_from_client(self, port):  # §8.4: clients cannot push
        assert conn_error(port, raw_frame(PUSH_PROMISE, END_HEADERS, 1, b"\0\0\0\x02")) == PROTOCOL_ERROR


class TestSec5_1_2_Concurrency:
    def test_many_streams_on_one_connection(self, port):
        r = Raw(port)
        ids = [r.headers() for _ in range(50)]
        got = {}
        for f in r.until(lambda f: len(got) == 50, timeout=5):
            if isinstance(f, DataFrame) and "END_STREAM" in f.flags:
                got[f.stream_id] = 1
        assert sorted(got) == ids


class TestSec5_3_Priority:
    def test_priority_frames_ignored(self, port):  # §5.3.2
        r = Raw(port)
        r.send(raw_frame(PRIORITY, 0, 3, b"\x80\0\0\x01\x10"), raw_frame(PRIORITY, 0, 9, b"\0\0\0\x03\xff"))
        sid = r.headers(sid=1)
        h, body, _ = r.response(sid)
        assert body == b"Hello world!"

    def test_headers_with_priority_flag(self, port):
        r = Raw(port)
        block = r.block(r.req_headers())
        r.send(raw_frame(HEADERS, END_STREAM | END_HEADERS | PRIO, 1, b"\0\0\0\0\x20" + block))
        h, body, _ = r.response(1)
        assert body == b"Hello world!"

    def test_priority_wrong_length(self, port):  # §6.3
        r = Raw(port)
        r.send(raw_frame(PRIORITY, 0, 1, b"\0\0\0"))
        fs = r.until(lambda f: isinstance(f, (RstStreamFrame, GoAwayFrame)))
        assert fs and fs[-1].error_code == FRAME_SIZE_ERROR

    def test_priority_on_stream_zero(self, port):  # §6.3
        assert conn_error(port, raw_frame(PRIORITY, 0, 0, b"\0\0\0\x01\x10")) == PROTOCOL_ERROR


class TestSec6_1_Data:
    def test_data_on_stream_zero(self, port):
        assert conn_error(port, raw_frame(DATA, 0, 0, b"x")) == PROTOCOL_ERROR

    def test_padded_data_body(self, port):
        r = Raw(port)
        sid = r.headers(method="POST", path="/echo", end_stream=False, extra=[("content-length", "5")])
        r.send(raw_frame(DATA, PADDED | END_STREAM, sid, b"\x03hello\0\0\0"))
        h, body, rst = r.response(sid)
        assert h[":status"] == "200" and body == b"hello"

    def test_padding_longer_than_payload(self, port):
        assert conn_error(port, raw_frame(HEADERS, END_HEADERS, 1, Raw(port, preface=False).block(
            [(":method", "POST"), (":scheme", "http"), (":path", "/echo"), (":authority", "x")])),
            raw_frame(DATA, PADDED, 1, b"\x09abc")) == PROTOCOL_ERROR


class TestSec6_2_Headers:
    def test_headers_on_stream_zero(self, port):
        r = Raw(port)
        assert conn_error(port, raw_frame(HEADERS, END_STREAM | END_HEADERS, 0,
                                          r.block(r.req_headers()))) == PROTOCOL_ERROR

    def test_trailers_after_body(self, port):  # §8.1
        r = Raw(port)
        sid = r.headers(method="POST", path="/echo", end_stream=False)
        r.data(sid, b"abc")
        f = HeadersFrame(sid)
        f.data = r.block([("x-checksum", "1")])
        f.flags = {"END_STREAM", "END_HEADERS"}
        r.send(f)
        h, body, rst = r.response(sid)
        assert h[":status"] == "200" and body == b"abc" and rst is None


class TestSec6_5_Settings:
    def test_settings_acknowledged(self, port):
        r = Raw(port)
        fs = r.until(lambda f: isinstance(f, SettingsFrame) and "ACK" in f.flags)
        assert fs and "ACK" in fs[-1].flags

    def test_ack_with_payload(self, port):
        assert conn_error(port, raw_frame(SETTINGS, ACK, 0, b"\0\x03\0\0\0\x01")) == FRAME_SIZE_ERROR

    def test_length_not_multiple_of_six(self, port):
        assert conn_error(port, raw_frame(SETTINGS, 0, 0, b"\0\x03\0\0\0")) == FRAME_SIZE_ERROR

    def test_settings_on_a_stream(self, port):
        assert conn_error(port, raw_frame(SETTINGS, 0, 1, b"")) == PROTOCOL_ERROR

    def test_enable_push_not_0_or_1(self, port):
        assert conn_error(port, raw_frame(SETTINGS, 0, 0, b"\0\x02\0\0\0\x02")) == PROTOCOL_ERROR

    def test_initial_window_too_large(self, port):
        assert conn_error(port, raw_frame(SETTINGS, 0, 0, b"\0\x04\x80\0\0\0")) == FLOW_CONTROL_ERROR

    def test_max_frame_size_out_of_range(self, port):
        assert conn_error(port, raw_frame(SETTINGS, 0, 0, b"\0\x05\0\0\x10\0")) == PROTOCOL_ERROR

    def test_unknown_setting_ignored(self, port):
        r = Raw(port)
        r.send(raw_frame(SETTINGS, 0, 0, b"\x7f\x7f\0\0\0\x01"))
        h, body, _ = r.response(r.headers())
        assert body == b"Hello world!"


class TestSec6_7_Ping:
    def test_ping_answered_with_same_payload(self, port):
        r = Raw(port)
        r.send(raw_frame(PING, 0, 0, b"spindle!"))
        fs = r.until(lambda f: isinstance(f, PingFrame))
        assert fs and "ACK" in fs[-1].flags and fs[-1].opaque_data == b"spindle!"

    def test_ping_on_a_stream(self, port):
        assert conn_error(port, raw_frame(PING, 0, 1, b"\0" * 8)) == PROTOCOL_ERROR

    def test_ping_wrong_length(self, port):
        assert conn_error(port, raw_frame(PING, 0, 0, b"\0" * 7)) == FRAME_SIZE_ERROR


class TestSec6_8_Goaway:
    def test_client_goaway_ends_the_connection(self, port):
        r = Raw(port)
        r.send(raw_frame(GOAWAY, 0, 0, b"\0\0\0\0\0\0\0\0"))
        assert r.closed()


class TestSec6_9_WindowUpdate:
    def test_zero_increment_on_connection(self, port):
        assert conn_error(port, raw_frame(WINDOW_UPDATE, 0, 0, b"\0\0\0\0")) == PROTOCOL_ERROR

    def test_zero_increment_on_stream(self, port):
        r = Raw(port)
        sid = r.headers(path="/sleep?ms=300")
        r.send(raw_frame(WINDOW_UPDATE, 0, sid, b"\0\0\0\0"))
        fs = r.until(lambda f: isinstance(f, (RstStreamFrame, GoAwayFrame)))
        assert fs and fs[-1].error_code == PROTOCOL_ERROR

    def test_connection_window_overflow(self, port):
        assert conn_error(port, raw_frame(WINDOW_UPDATE, 0, 0, b"\x7f\xff\xff\xff")) == FLOW_CONTROL_ERROR

    def test_wrong_length(self, port):
        assert conn_error(port, raw_frame(WINDOW_UPDATE, 0, 0, b"\0\0\x01")) == FRAME_SIZE_ERROR


class TestSec6_9_FlowControl:
    def test_response_waits_for_the_clients_window(self, port):
        # 60 KB back through /echo, with the client's stream window at 1000 bytes:
        # the server sends no more than the window until it is opened.
        r = Raw(port, settings={SettingsFrame.INITIAL_WINDOW_SIZE: 1000})
        body = b"z" * 60000
        sid = r.headers(method="POST", path="/echo", end_stream=False,
                        extra=[("content-length", str(len(body)))])
        for i in range(0, len(body), 16384):
            r.data(sid, body[i:i + 16384], end_stream=i + 16384 >= len(body))
        got = 0
        for f in r.until(lambda f: False, timeout=0.5):
            if isinstance(f, DataFrame) and f.stream_id == sid:
                got += len(f.data)
        assert got == 1000
        r.window_update(0, got)
        r.window_update(sid, 200000)  # now it may all come
        h, rest, rst = r.response(sid, timeout=5)
        assert got + len(rest) == len(body) and rst is None

    def test_upload_window_reopens_only_as_the_handler_reads(self, port):
        # /sleep never reads its body: after the first window (65535) the
        # server opens no more for the stream.
        r = Raw(port)
        sid = r.headers(method="GET", path="/sleep?ms=700", end_stream=False)
        sent = 0
        for _ in range(4):
            r.data(sid, b"u" * 16383)
            sent += 16383
        r.data(sid, b"u" * 3)
        fs = r.until(lambda f: False, timeout=0.4)
        assert not [f for f in fs if isinstance(f, WindowUpdateFrame) and f.stream_id == sid]
        r.data(sid, b"x")  # one byte past the window: a flow-control error
        fs = r.until(lambda f: isinstance(f, (RstStreamFrame, GoAwayFrame)))
        assert fs and fs[-1].error_code == FLOW_CONTROL_ERROR

    def test_upload_larger_than_the_window_to_a_reader(self, port):
        r = Raw(port)
        body = bytes(range(256)) * 1024  # 256 KiB, four windows
        sid = r.headers(method="POST", path="/echo", end_stream=False,
                        extra=[("content-length", str(len(body)))])
        off = 0
        window = 65535
        back = b""
        while off < len(body):
            n = min(16384, window, len(body) - off)
            if n == 0:
                for f in r.until(lambda f: isinstance(f, WindowUpdateFrame) and f.stream_id == sid, 3):
                    if isinstance(f, WindowUpdateFrame) and f.stream_id == sid:
                        window += f.window_increment
                    if isinstance(f, DataFrame):
                        back += f.data
                        r.window_update(0, len(f.data))
                        r.window_update(sid, len(f.data))
                continue
            r.data(sid, body[off:off + n], end_stream=off + n == len(body))
            off += n
            window -= n
        h, rest, rst = r.response(sid, timeout=5)
        assert back + rest == body and rst is None


class TestSec6_10_Continuation:
    def test_headers_split_over_continuation(self, port):
        r = Raw(port)
        block = r.block(r.req_headers(extra=[("x-pad", "p" * 100)]))
        r.send(raw_frame(HEADERS, END_STREAM, 1, block[:10]), raw_frame(CONTINUATION, 0, 1, block[10:50]),
               raw_frame(CONTINUATION, END_HEADERS, 1, block[50:]))
        h, body, _ = r.response(1)
        assert body == b"Hello world!"

    def test_continuation_without_headers(self, port):
        assert conn_error(port, raw_frame(CONTINUATION, END_HEADERS, 1, b"\x82")) == PROTOCOL_ERROR

    def test_other_frame_inside_a_header_block(self, port):
        r = Raw(port)
        block = r.block(r.req_headers())
        r.send(raw_frame(HEADERS, END_STREAM, 1, block[:5]), raw_frame(PING, 0, 0, b"\0" * 8))
        g = r.goaway()
        assert g is not None and g.error_code == PROTOCOL_ERROR


class TestSec8_1_Messages:
    def test_content_length_larger_than_data(self, port):  # §8.1.1
        r = Raw(port)
        sid = r.headers(method="POST", path="/echo", end_stream=False, extra=[("content-length", "10")])
        r.data(sid, b"abc", end_stream=True)
        assert r.reset_code(sid) == PROTOCOL_ERROR

    def test_content_length_smaller_than_data(self, port):
        r = Raw(port)
        sid = r.headers(method="POST", path="/echo", end_stream=False, extra=[("content-length", "2")])
        r.data(sid, b"abcdef", end_stream=True)
        assert r.reset_code(sid) == PROTOCOL_ERROR

    def test_head_has_no_body(self, port):
        r = Raw(port)
        h, body, rst = r.response(r.headers(method="HEAD"))
        assert h[":status"] == "200" and h["content-length"] == "12" and body == b""

    def test_expect_100_continue(self, port):  # §8.1: an interim response on the stream
        r = Raw(port)
        sid = r.headers(method="POST", path="/echo", end_stream=False,
                        extra=[("content-length", "4"), ("expect", "100-continue")])
        fs = r.until(lambda f: isinstance(f, HeadersFrame) and f.stream_id == sid, timeout=2)
        assert fs and dict(fs[-1].fields)[":status"] == "100" and "END_STREAM" not in fs[-1].flags
        r.data(sid, b"body", end_stream=True)
        h, body, rst = r.response(sid)
        assert h[":status"] == "200" and body == b"body"

    def test_body_without_content_length(self, port):
        r = Raw(port)
        sid = r.headers(method="POST", path="/echo", end_stream=False)
        r.data(sid, b"one ")
        r.data(sid, b"two", end_stream=True)
        h, body, rst = r.response(sid)
        assert h[":status"] == "200" and body == b"one two"


class TestSec8_2_Fields:
    @pytest.mark.parametrize("name,value", [("connection", "close"), ("keep-alive", "1"),
                                            ("transfer-encoding", "chunked"), ("upgrade", "h2c"),
                                            ("te", "gzip")])
    def test_connection_specific_field_is_malformed(self, port, name, value):  # §8.2.2
        r = Raw(port)
        sid = r.headers(extra=[(name, value)])
        assert r.reset_code(sid) == PROTOCOL_ERROR
        h, body, _ = r.response(r.headers())  # the connection goes on
        assert body == b"Hello world!"

    def test_upper_case_name_is_malformed(self, port):  # §8.2.1
        r = Raw(port)
        assert r.reset_code(r.headers(extra=[("X-Upper", "1")])) == PROTOCOL_ERROR

    def test_te_trailers_allowed(self, port):
        r = Raw(port)
        h, body, _ = r.response(r.headers(extra=[("te", "trailers")]))
        assert body == b"Hello world!"

    def test_cookie_crumbs_joined(self, tmp_path_factory):  # §8.2.3
        # seen through the access log's %{cookie}i: one header, "; "-joined
        log = tmp_path_factory.mktemp("h2log") / "access.log"
        srv, stop = start(tmp_path_factory, "--access-log", str(log), "--access-log-format",
                          "%r %{cookie}i")
        try:
            r = Raw(srv.port)
            h, body, _ = r.response(r.headers(extra=[("cookie", "a=1"), ("cookie", "b=2")]))
            assert body == b"Hello world!"
        finally:
            stop()
        assert "GET / HTTP/2.0 a=1; b=2" in log.read_text()


    def test_heads_small_and_large_reach_the_handler_whole(self, tmp_path_factory):
        # A stream keeps a small head in its own room (H2_HEAD_INLINE, 544
        # octets of fields and bytes) and a larger one in a block of its size
        # (h2_stream_keep_head): both are seen whole, on one connection, with
        # streams of each kind interleaved.
        log = tmp_path_factory.mktemp("h2log") / "access.log"
        srv, stop = start(tmp_path_factory, "--access-log", str(log), "--access-log-format",
                          "%U %{x-a}i %{x-b}i")
        big = "B" * 200  # with the four 400-octet fields: well past the stream's own room
        pad = [("x-pad%d" % k, "p" * 400) for k in range(4)]
        try:
            r = Raw(srv.port)
            # All four heads first (one read, most likely): a head left in the
            # connection's scratch would show the next one's fields.
            frames = []
            for i in range(4):
                f = HeadersFrame(1 + 2 * i)
                f.data = r.block(r.req_headers(path="/?n=%d" % i, extra=[
                    ("x-a", "small%d" % i), ("x-b", big + str(i) if i % 2 else "s")] + (pad if i % 2 else [])))
                f.flags = {"END_STREAM", "END_HEADERS"}
                frames.append(f)
            r.send(*frames)
            h, body, _ = r.response(7)
            assert body == b"Hello world!"
            time.sleep(0.2)  # the other three answered too
        finally:
            stop()
        text = log.read_text()
        for i in range(4):
            assert "/ small%d %s" % (i, big + str(i) if i % 2 else "s") in text, text[-400:]


class TestSec8_3_PseudoHeaders:
    def test_missing_path(self, port):
        r = Raw(port)
        sid = r.headers(headers=[(":method", "GET"), (":scheme", "http"), (":authority", "x")])
        assert r.reset_code(sid) == PROTOCOL_ERROR

    def test_pseudo_after_regular(self, port):
        r = Raw(port)
        sid = r.headers(headers=[(":method", "GET"), ("accept", "*/*"), (":scheme", "http"),
                                 (":path", "/"), (":authority", "x")])
        assert r.reset_code(sid) == PROTOCOL_ERROR

    def test_unknown_pseudo(self, port):
        r = Raw(port)
        assert r.reset_code(r.headers(extra=[(":bogus", "1")])) == PROTOCOL_ERROR

    def test_response_pseudo_in_request(self, port):
        r = Raw(port)
        assert r.reset_code(r.headers(extra=[(":status", "200")])) == PROTOCOL_ERROR

    def test_authority_and_host_disagree(self, port):
        r = Raw(port)
        h, body, rst = r.response(r.headers(authority="a.example", extra=[("host", "b.example")]))
        assert h.get(":status") == "400" and rst is None  # nghttp2 lets it through; h2_head refuses

    def test_host_without_authority(self, port):
        r = Raw(port)
        h, body, _ = r.response(r.headers(authority=None, extra=[("host", "h.example")]))
        assert h[":status"] == "200"

    def test_path_normalised_as_for_http11(self, port):
        r = Raw(port)
        h, body, _ = r.response(r.headers(path="/x/../"))
        assert h[":status"] == "200" and body == b"Hello world!"

    def test_unknown_path_is_404_and_wrong_method_405(self, port):
        r = Raw(port)
        h, _, _ = r.response(r.headers(path="/nope"))
        assert h[":status"] == "404"
        h, _, _ = r.response(r.headers(path="/echo", method="GET"))
        assert h[":status"] == "405" and "allow" in h

    def test_options_asterisk(self, port):
        r = Raw(port)
        h, _, _ = r.response(r.headers(path="*", method="OPTIONS"))
        assert h[":status"] == "204" and "GET" in h["allow"]

    def test_connect_not_served(self, port):
        r = Raw(port)
        sid = r.headers(headers=[(":method", "CONNECT"), (":authority", "x:443")])
        h, _, rst = r.response(sid)
        assert h.get(":status") == "501"  # no tunnels

    def test_response_has_lower_case_names_and_no_connection_fields(self, port):
        r = Raw(port)
        h, _, _ = r.response(r.headers())
        assert all(k == k.lower() for k in h)
        assert not {"connection", "keep-alive", "transfer-encoding"} & set(h)
