"""ASGI http scope (spec 2.4) on spindle: every scope key, decoded path and
raw_path, headers lower-cased in order, client through a trusted proxy,
root_path, state; receive() streaming the body with more_body and bounded
chunks, http.disconnect after the response and when the client leaves;
send() streaming, waiting while the socket is full, pathsend; asyncio.sleep
and asyncio.open_connection inside a handler; interface detection."""
import json
import re
import time

from lib.asgiutil import connect, recv_until, shared_asgi, asgi, wait_for  # noqa: F401
from lib.client import Conn


def test_scope_keys(shared_asgi):
    with Conn(shared_asgi.port) as c:
        c.request("GET", "/scope?a=1&b=%C3%A9", headers=[("X-Mixed-Case", "V1"), ("x-mixed-case", "v2"),
                                                        ("Connection", "close")])
        r = c.response()
    s = json.loads(r.body)
    assert s["type"] == "http"
    assert s["asgi"] == {"version": "3.0", "spec_version": "2.4"}
    assert s["http_version"] == "1.1" and s["method"] == "GET" and s["scheme"] == "http"
    assert s["path"] == "/scope" and s["raw_path"] == "/scope"
    assert s["query_string"] == "a=1&b=%C3%A9"
    assert s["root_path"] == ""
    assert s["headers"][:3] == [["host", "127.0.0.1"], ["x-mixed-case", "V1"], ["x-mixed-case", "v2"]]
    assert s["client"][0] == "127.0.0.1" and isinstance(s["client"][1], int) and s["client"][1] > 0
    assert s["server"] == ["127.0.0.1", shared_asgi.port]
    # HTTP/1.1 without TE: trailers (test_asgi_ext.py: where each is declared)
    assert s["extensions"] == {"http.response.pathsend": {}, "http.response.zerocopysend": {},
                               "http.response.early_hint": {}}
    assert s["state"] == {"greeting": "hello from lifespan"}


def test_path_decoded_utf8_raw_path_kept(shared_asgi):
    r = shared_asgi.raw(b"GET /scope/caf%C3%A9%20x HTTP/1.0\r\n\r\n")
    s = json.loads(r.split(b"\r\n\r\n", 1)[1])
    assert s["path"] == "/scope/caf\u00e9 x"
    assert s["raw_path"] == "/scope/caf%C3%A9%20x"
    assert s["http_version"] == "1.0"


def test_scope_types_are_bytes_and_tuples(asgi):
    # checked inside the app with isinstance: the JSON view hides the types
    srv = asgi("asgi_types:app")
    r = srv.get("/p?q=1", headers=[("X-A", "b")])
    assert r.status == 200 and r.body == b"ok", r.body


def test_state_is_a_copy_per_request(shared_asgi):
    assert shared_asgi.json("/state") == {"greeting": "hello from lifespan"}


def test_client_through_trusted_proxy_and_root_path(asgi):
    srv = asgi("asgi_spec:app", "--forwarded-allow-ips", "127.0.0.1", "--root-path", "/mnt")
    r = srv.get("/scope", headers=[("X-Forwarded-For", "203.0.113.7"), ("X-Forwarded-Proto", "https")])
    s = json.loads(r.body)
    assert s["client"] == ["203.0.113.7", 0]
    assert s["scheme"] == "https"
    assert s["root_path"] == "/mnt"
    # path and raw_path start with root_path (the ASGI spec; uvicorn too)
    assert s["path"] == "/mnt/scope" and s["raw_path"] == "/mnt/scope", s
    srv2 = asgi("asgi_spec:app")  # not trusted: the header is ignored
    s2 = json.loads(srv2.get("/scope", headers=[("X-Forwarded-For", "203.0.113.7")]).body)
    assert s2["client"][0] == "127.0.0.1" and s2["scheme"] == "http"


def test_body_in_one_and_empty(shared_asgi):
    r = shared_asgi.get("/echo", method="POST", body=b"hello body")
    assert r.status == 200 and r.body == b"hello body" and r.header("x-chunks") == "1"
    r = shared_asgi.get("/echo")
    assert r.body == b"" and r.header("x-chunks") == "1"
    shared_asgi.events()


def test_streamed_chunked_upload_arrives_in_pieces(shared_asgi):
    s = connect(shared_asgi.port)
    s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
    for i in range(3):
        s.sendall(b"5\r\npart%d\r\n" % i)
        time.sleep(0.05)
    s.sendall(b"0\r\n\r\n")
    data = recv_until(s, b"part2")
    s.close()
    assert data.endswith(b"part0part1part2"), data
    chunks = shared_asgi.events()[-1]["chunks"]
    assert len(chunks) >= 3 and chunks[-1][1] is False and all(m for _, m in chunks[:-1]), chunks
    assert sum(n for n, _ in chunks) == 15


def test_big_upload_is_read_in_bounded_chunks(shared_asgi):
    body = b"y" * (3 << 20)
    r = shared_asgi.get("/count", method="POST", body=body)
    assert r.body == b"%d" % len(body)
    chunks = shared_asgi.events()[-1]["chunks"]
    assert max(n for n, _ in chunks) <= 65536, "read-ahead is bounded"
    assert len(chunks) >= 48


def test_a_cancelled_receive_does_not_lose_the_body(shared_asgi):
    s = connect(shared_asgi.port)
    s.sendall(b"POST /cancelled_receive HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
              b"Connection: close\r\n\r\n")
    time.sleep(0.2)
    s.sendall(b"late")
    data = recv_until(s, b"never")
    s.close()
    assert data.endswith(b"\r\n\r\nlate"), data


def test_streamed_response(shared_asgi):
    r = shared_asgi.get("/stream?n=4")
    assert r.status == 200 and r.header("transfer-encoding") == "chunked"
    assert r.body == b"part0\npart1\npart2\npart3\n"


def test_disconnect_when_client_leaves(shared_asgi):
    shared_asgi.events()
    s = connect(shared_asgi.port)
    s.sendall(b"GET /wait_disconnect HTTP/1.1\r\nHost: x\r\n\r\n")
    assert b"started" in recv_until(s, b"started")
    s.close()
    seen = []
    wait_for(lambda: seen.extend(shared_asgi.events()) or any("send_after_disconnect" in e for e in seen), 3)
    ev = [e for e in seen if "disconnect" in e]
    assert ev and ev[0]["disconnect"] == ["http.request", "http.disconnect"], seen
    ev = [e for e in seen if "send_after_disconnect" in e]
    assert ev and ev[0]["send_after_disconnect"] == "ClientDisconnected", seen


def test_disconnect_after_response(shared_asgi):
    shared_asgi.events()
    assert shared_asgi.get("/after_response").body == b"done"
    ev = wait_for(lambda: [e for e in shared_asgi.events() if "after_response" in e], 3)
    assert ev[0]["after_response"] == ["http.request", "http.disconnect"], ev


def test_send_waits_while_the_socket_is_full(shared_asgi):
    def sent():
        return int(shared_asgi.get("/flood_state").body)
    s = connect(shared_asgi.port)
    s.sendall(b"GET /flood?chunks=2000 HTTP/1.1\r\nHost: x\r\n\r\n")  # 131 MB if unbounded
    time.sleep(0.5)
    a = sent()
    time.sleep(0.3)
    b = sent()
    assert a == b and 0 < a < 64 << 20, (a, b)  # stopped, far below the whole
    got = 0
    while got < 4 << 20:  # reading lets it go on
        got += len(s.recv(1 << 16))
    assert wait_for(lambda: sent() > a, 3)
    s.close()


def test_an_empty_first_chunk_sends_the_head(shared_asgi):
    s = connect(shared_asgi.port)
    s.sendall(b"GET /head_first HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    s.settimeout(0.4)  # before the app's first event
    head = s.recv(4096)
    assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head
    s.settimeout(3)
    rest = recv_until(s, b"never")
    s.close()
    assert b"data: late" in head + rest and (head + rest).endswith(b"0\r\n\r\n")


def test_pathsend(shared_asgi, tmp_path):
    f = tmp_path / "file.bin"
    f.write_bytes(b"0123456789" * 1000)
    r = shared_asgi.get("/pathsend?file=%s" % f)
    assert r.status == 200 and r.body == f.read_bytes()
    assert r.header("content-length") == "10000"


def test_head_has_no_body(shared_asgi):
    r = shared_asgi.get("/stream", method="HEAD")
    assert r.status == 200 and r.body == b""


def test_keepalive_and_pipelining(shared_asgi):
    s = connect(shared_asgi.port)
    s.sendall(b"GET /sleep?s=0.01 HTTP/1.1\r\nHost: x\r\n\r\n" * 3 +
              b"GET /stream?n=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = recv_until(s, b"part0\n\r\n0\r\n\r\n")
    s.close()
    assert data.count(b"HTTP/1.1 200 OK") == 4 and data.count(b"slept") == 3


def test_each_call_runs_in_its_own_named_task(shared_asgi):
    # An asyncio.Task per application call, named by the binding (CPython
    # 3.11 would format "Task-N" itself at some 1,400 instructions a call).
    names = [shared_asgi.get("/task").body.decode() for _ in range(3)]
    kinds = {n.split()[0] for n in names}
    assert kinds == {"Task"}, names
    ids = [n.split()[1] for n in names]
    assert len(set(ids)) == 3 and all(re.fullmatch(r"spindle-http-\d+", i) for i in ids), ids


def test_asyncio_sleep_and_open_connection_in_a_handler(shared_asgi):
    t = time.monotonic()
    assert shared_asgi.get("/sleep?s=0.2").body == b"slept"
    assert time.monotonic() - t >= 0.2
    # an asyncio client socket on the same loop, here to the server itself
    assert shared_asgi.get("/connect?port=%d" % shared_asgi.port).body == b"slept"


def test_sleeping_requests_overlap(shared_asgi):
    import threading
    out = []
    ts = [threading.Thread(target=lambda: out.append(shared_asgi.get("/sleep?s=0.3").body))
          for _ in range(10)]
    t = time.monotonic()
    [x.start() for x in ts]
    [x.join(5) for x in ts]
    assert out == [b"slept"] * 10 and time.monotonic() - t < 1.5


def test_interface_detection(asgi):
    srv = asgi("asgi_spec:app_object")  # an object whose __call__ is async
    assert srv.get("/state").status == 200
    srv = asgi("asgi_spec:wsgi_app")  # WSGI in the same module
    assert srv.get("/").body == b"wsgi here"
    srv = asgi("asgi_spec:app_partial", "--interface", "asgi")
    assert srv.get("/state").status == 200


def test_expect_100_continue(shared_asgi):
    s = connect(shared_asgi.port)
    s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n"
              b"Connection: close\r\n\r\n")
    assert recv_until(s, b"\r\n\r\n").startswith(b"HTTP/1.1 100 Continue")
    s.sendall(b"hello")
    data = recv_until(s, b"never")
    s.close()
    assert b"HTTP/1.1 200 OK" in data and data.endswith(b"hello")


def test_unix_socket_client_and_server(asgi, tmp_path):
    import socket as so
    path = str(tmp_path / "s.sock")
    srv = asgi("asgi_spec:app", "--bind", "unix:" + path)
    c = so.socket(so.AF_UNIX)
    c.settimeout(5)
    c.connect(path)
    c.sendall(b"GET /scope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    body = recv_until(c, b"never").split(b"\r\n\r\n", 1)[1]
    c.close()
    s = json.loads(body)
    assert s["client"] is None and s["server"] == [path, None]


def test_invalid_utf8_in_the_path_is_replaced(shared_asgi):
    r = shared_asgi.raw(b"GET /scope/%ff%41 HTTP/1.0\r\n\r\n")
    s = json.loads(r.split(b"\r\n\r\n", 1)[1])
    assert s["path"] == "/scope/\ufffdA" and s["raw_path"] == "/scope/%ff%41"
