"""ASGI websocket scope (spec 2.4) over the C WebSocket layer: connect,
accept with a subprotocol and extra headers, text and binary echo,
fragments and pings handled by the server, close codes both ways,
websocket.disconnect with the client's code, rejection before accept
(403), the websocket.http.response denial, an app that fails (1011) or
returns (1000 / 403), --ws-max-message (1009), and 1001 on stop."""
import json
import struct

from lib.asgiutil import WS, asgi, shared_asgi, wait_for  # noqa: F401


def test_scope_accept_subprotocol_headers_echo(shared_asgi):
    c = WS(shared_asgi.port, "/ws/echo", protocols="chat, superchat")
    assert c.ok, c.head
    assert b"Sec-WebSocket-Protocol: chat" in c.head and b"x-extra: yes" in c.head
    c.send("h\u00e9llo")
    assert c.recv() == "h\u00e9llo"
    blob = bytes(range(256)) * 300
    c.send(blob)
    assert c.recv() == blob
    c.frame(1, b"frag", fin=False)
    c.frame(9, b"mid")  # a ping between fragments: the server answers
    assert c.recv_frame() == (10, b"mid")
    c.frame(0, b"ment", fin=True)
    assert c.recv() == "fragment"
    assert c.close(4321)[0] == 4321
    ev = wait_for(lambda: [e for e in shared_asgi.events() if "ws_disconnect" in e], 3)
    assert ev and ev[0]["ws_disconnect"] == 4321


def test_websocket_scope_keys(asgi):
    srv = asgi("asgi_ws_scope:app")
    c = WS(srv.port, "/chat?room=1", protocols="a, b")
    assert c.ok, c.head
    s = json.loads(c.recv())
    assert s["type"] == "websocket" and s["scheme"] == "ws" and s["path"] == "/chat"
    assert s["query_string"] == "room=1" and s["subprotocols"] == ["a", "b"]
    assert s["asgi"] == {"version": "3.0", "spec_version": "2.4"}
    assert s["extensions"] == {"websocket.http.response": {}}
    assert ["upgrade", "websocket"] in s["headers"] and "method" not in s
    c.close()


def test_app_closes_with_code_and_reason(shared_asgi):
    c = WS(shared_asgi.port, "/ws/echo")
    c.send("close-me")
    assert c.close_code() == (4001, b"asked")


def test_receive_before_accept_and_close_while_receiving(shared_asgi):
    c = WS(shared_asgi.port, "/ws/concurrent")
    assert c.ok
    c.send("first")
    assert c.recv() == "got first"
    assert c.close_code() == (4002, b"while receiving")
    ev = wait_for(lambda: [e for e in shared_asgi.events() if "concurrent" in e], 3)
    assert ev and ev[0]["concurrent"] == "websocket.disconnect"


def test_concurrent_sends_are_queued_in_order(shared_asgi):
    c = WS(shared_asgi.port, "/ws/fanout")
    assert [c.recv() for _ in range(50)] == ["m%d" % i for i in range(50)]
    assert c.close_code()[0] == 1000


def test_sends_before_a_close_all_arrive_first(shared_asgi):
    c = WS(shared_asgi.port, "/ws/burst_close")
    assert [c.recv() for _ in range(20)] == [b"%d" % i * 1000 for i in range(20)]
    assert c.close_code()[0] == 4003


def test_ws_send_waits_while_the_client_does_not_read(shared_asgi):
    import time

    def sent():
        return int(shared_asgi.get("/flood_state?k=ws_flood").body)
    c = WS(shared_asgi.port, "/ws/flood")
    time.sleep(0.5)
    a = sent()
    time.sleep(0.3)
    assert a == sent() and 0 < a < 200, a  # 100 MB if unbounded
    for _ in range(40):
        c.recv()
    assert wait_for(lambda: sent() > a, 3)
    c.s.close()


def test_close_before_accept_is_403(shared_asgi):
    c = WS(shared_asgi.port, "/ws/reject")
    assert not c.ok and c.head.startswith(b"HTTP/1.1 403")


def test_denial_response(shared_asgi):
    c = WS(shared_asgi.port, "/ws/deny")
    assert c.head.startswith(b"HTTP/1.1 401") and c.buf.endswith(b"go away")


def test_app_returning_without_accept_is_403(shared_asgi):
    c = WS(shared_asgi.port, "/ws/return")
    assert c.head.startswith(b"HTTP/1.1 403")


def test_app_failing_after_accept_closes_1011(shared_asgi):
    c = WS(shared_asgi.port, "/ws/raise")
    assert c.ok
    assert c.close_code()[0] == 1011


def test_invalid_utf8_and_max_message(asgi):
    srv = asgi("asgi_spec:app", "--ws-max-message", "1000")
    c = WS(srv.port, "/ws/echo")
    c.send("x" * 1000)
    assert c.recv() == "x" * 1000
    c.send("x" * 1001)
    assert c.close_code()[0] == 1009
    c = WS(srv.port, "/ws/echo")
    c.frame(1, b"\xff\xfe")
    assert c.close_code()[0] == 1007
    seen = []
    wait_for(lambda: seen.extend(e["ws_disconnect"] for e in srv.events() if "ws_disconnect" in e)
             or len(seen) == 2, 3)
    assert sorted(seen) == [1007, 1009]


def test_stop_closes_open_websockets_1001(asgi):
    srv = asgi("asgi_spec:app")
    c = WS(srv.port, "/ws/echo")
    c.send("x")
    assert c.recv() == "x"
    import os
    import signal
    s = WS(srv.port, "/ws/sender")  # an app that never receives
    assert s.recv() == "tick0"
    os.kill(srv.pid, signal.SIGTERM)
    assert c.close_code()[0] == 1001
    while True:
        m = s.recv()
        if isinstance(m, tuple):  # the close frame, long before --graceful-timeout
            assert m[0] == 8 and m[1][:2] == b"\x03\xe9", m
            break
