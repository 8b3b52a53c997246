"""A handler's slices of its request (sp_req_header and the like) keep
their bytes across a long wait — a condition, a bus subscription, a
WebSocket's receive — while other clients' requests fill buffers
meanwhile (tests/fixtures/c/app_slices.c). The long wait used to hand the
connection's buffer back to the pool, so a slice taken before it read the
next client's bytes afterwards: another visitor's header in this one's
answer."""
import base64
import os
import pathlib
import socket
import time

import pytest

from lib.server import BIN

APP = str(pathlib.Path(BIN).parent / "tests" / "fixtures" / "c" / "app_slices.so")
SECRET = "alice-secret-token-0123456789"


def open_request(port, path, secret, extra=""):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nX-Secret: %s\r\n%s\r\n" % (path, secret, extra))
              .encode())
    return s


def crowd(port, path):
    """Requests of the same shape from others, whole and cut short (so
    their buffers stay taken), while the first one waits."""
    done = [open_request(port, path, "B" * len(SECRET)) for _ in range(30)]
    held = []
    for _ in range(8):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nX-Secret: %s" % (path, "M" * len(SECRET)))
                  .encode())
        held.append(s)
    return done + held


def read_reply(s):
    """(head, body) bytes of one answer: up to its body's first line."""
    data = b""
    while b"\n" not in data.partition(b"\r\n\r\n")[2]:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return head, body


def read_answer(s):
    return read_reply(s)[1].decode(errors="replace").strip()


@pytest.mark.parametrize("path", ["/cond", "/bus", "/at"])
def test_a_slice_keeps_its_bytes_across_a_long_wait(spindle, path):
    srv = spindle("--app", APP, "--workers", "1")
    waiting = open_request(srv.port, path, SECRET)
    time.sleep(0.3)  # it waits (a long wait from 25 ms on)
    others = crowd(srv.port, "/bus" if path == "/bus" else "/cond")
    body = read_answer(waiting)
    assert body == "before=%s after=%s" % (SECRET, SECRET), body
    for s in others:
        s.close()


@pytest.mark.parametrize("route", ["late", "held"])
def test_the_path_and_fields_come_back_after_a_long_wait(spindle, route):
    # The request's fields and its path live in the buffer's front: a long
    # wait moves them with the buffer's bytes (late: nothing taken before)
    # or keeps the buffer (held: the path and a parameter taken before);
    # either way they read the same after it, whatever others sent
    # meanwhile, and a response outgrowing its own store is whole.
    srv = spindle("--app", APP, "--workers", "1")
    path = "/%s/%s" % (route, "n" * 40)
    waiting = open_request(srv.port, path + "?q=" + "z" * 300, SECRET)
    time.sleep(0.3)  # it waits (a long wait from 25 ms on)
    others = crowd(srv.port, "/%s/%s" % (route, "o" * 40))
    head, body = read_reply(waiting)
    before = "%s %s" % (path, "n" * 40) if route == "held" else "- -"
    assert body.decode().strip() == "before=%s after=%s %s %s (%s)" % (
        before, path, "n" * 40, SECRET, before), body
    assert head.count(b"X-Many-") == 20, head
    assert b"X-Many-19: a value long enough to outgrow the store\r\n" in head, head
    for s in others:
        s.close()


def test_a_websocket_handler_keeps_its_request_slices(spindle):
    srv = spindle("--app", APP, "--workers", "1")
    key = base64.b64encode(os.urandom(16)).decode()
    ws = open_request(srv.port, "/ws", SECRET, "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n" % key)
    head = b""
    while b"\r\n\r\n" not in head:
        head += ws.recv(4096)
    assert head.startswith(b"HTTP/1.1 101"), head
    time.sleep(0.3)  # parked in its receive: a long wait
    others = crowd(srv.port, "/cond")
    msg = b"x" * 100  # frames are read into the buffer the head is in
    mask = os.urandom(4)
    ws.sendall(bytes([0x81, 0x80 | len(msg)]) + mask + bytes(b ^ mask[i % 4] for i, b in
                                                             enumerate(msg)))
    data = b""
    while len(data) < 4:
        data += ws.recv(65536)
    n, start = (data[1], 2) if data[1] < 126 else (int.from_bytes(data[2:4], "big"), 4)
    while len(data) < start + n:
        data += ws.recv(65536)
    text = data[start:start + n].decode(errors="replace")
    assert text == "before=%s after=%s msg=%s" % (SECRET, SECRET, msg.decode()), text
    for s in others:
        s.close()
