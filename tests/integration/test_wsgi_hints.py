"""103 Early Hints from WSGI: environ["spindle.early_hints"](links) over
HTTP/1.1 (raw socket) and HTTP/2 (python h2), before and after
start_response but never after the first body bytes (RuntimeError), the
links checked (no CR/LF/NUL, at most 16, bytes or str), nothing to
HTTP/1.0 (False). tests/fixtures/wsgi/hints_app.py is the application."""
import json
import socket

import h2.events

from lib.h2util import h2_client
from lib.client import read_until_close
from lib.wsgiutil import wsgi_server  # noqa: F401


def raw(port, version="1.1"):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(("GET / HTTP/%s\r\nHost: x\r\nConnection: close\r\n\r\n" % version).encode())
    out = read_until_close(s)
    s.close()
    return out


def test_early_hints_over_http11(wsgi_server):  # noqa: F811
    srv = wsgi_server("hints_app:app")
    out = raw(srv.port)
    first, second, rest = out.split(b"\r\n\r\n", 2)
    assert first == (b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n"
                     b"Link: </app.js>; rel=preload"), out
    assert second == b"HTTP/1.1 103 Early Hints\r\nLink: </late-but-ok.css>", out
    assert rest.startswith(b"HTTP/1.1 200 OK") and b"\r\nSet-Cookie" not in out, out
    got = json.loads(b"".join(rest.split(b"\r\n\r\n", 1)[1].split(b"\r\n")[1::2])[1:-1])
    assert got["first"] is True and got["after_start"] is True, got
    assert got["crlf"].startswith("ValueError") and "no CR, LF, NUL" in got["crlf"], got
    assert got["many"].startswith("ValueError: at most 16 links"), got
    assert got["type"].startswith("TypeError"), got
    assert "after the response head went out" in got["late"], got
    out = raw(srv.port, "1.0")  # no 1xx to HTTP/1.0 (RFC 9110 §15.2): False, nothing sent
    assert out.startswith(b"HTTP/1.0 200 OK") and b"Early Hints" not in out, out
    got = json.loads(out.split(b"\r\n\r\n", 1)[1][1:-1])
    assert got["first"] is False and got["after_start"] is False, got


def test_early_hints_over_h2(wsgi_server):  # noqa: F811
    srv = wsgi_server("hints_app:app")
    s, c = h2_client(srv.port)
    sid = c.get_next_available_stream_id()
    c.send_headers(sid, [(":method", "GET"), (":scheme", "http"), (":path", "/"),
                         (":authority", "localhost")], end_stream=True)
    s.sendall(c.data_to_send())
    interim, status, ended = [], None, False
    while not ended:
        data = s.recv(65536)
        assert data
        for ev in c.receive_data(data):
            if isinstance(ev, h2.events.InformationalResponseReceived):
                interim.append(ev.headers)
            elif isinstance(ev, h2.events.ResponseReceived):
                status = dict(ev.headers)[":status"]
            elif isinstance(ev, h2.events.DataReceived):
                c.acknowledge_received_data(ev.flow_controlled_length, sid)
            ended = ended or isinstance(ev, (h2.events.StreamEnded, h2.events.StreamReset))
        s.sendall(c.data_to_send())
    s.close()
    assert interim == [[(":status", "103"), ("link", "</style.css>; rel=preload; as=style"),
                        ("link", "</app.js>; rel=preload")],
                       [(":status", "103"), ("link", "</late-but-ok.css>")]], interim
    assert status == "200"
