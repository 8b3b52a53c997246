"""The tls workload's idle-connection holder, run by the harness as its own
process (pinned to the load generator's CPU, OPENSSL_CONF limiting it to the
workload's suite and group): opens COUNT TLS connections to 127.0.0.1:PORT
(at most 64 handshakes in flight), makes one GET / on each, keeps them open,
prints "READY held=N errors=E note=…" once they have settled, and closes them
all when its stdin reaches end of file.

    tls_idle.py PORT COUNT"""
import re
import select
import selectors
import socket
import ssl
import sys
import time

REQUEST = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"


def complete(data):
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    m = re.search(rb"(?i)content-length:\s*(\d+)", head)
    return len(body) >= int(m.group(1)) if m else body.endswith(b"0\r\n\r\n")


def step(s, st):
    """Advances one connection: handshake, request, answer. Returns the
    events it waits for next, "done" or "failed"."""
    try:
        if st["phase"] == "connect":
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                return "failed"
            st["phase"] = "handshake"
        if st["phase"] == "handshake":
            s.do_handshake()
            st["phase"] = "send"
        if st["phase"] == "send":
            s.send(REQUEST)
            st["phase"] = "read"
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return "failed"
            st["data"] += chunk
            if complete(st["data"]):
                return "done"
    except ssl.SSLWantReadError:
        return selectors.EVENT_READ
    except ssl.SSLWantWriteError:
        return selectors.EVENT_WRITE
    except (OSError, ssl.SSLError):
        return "failed"


def hold(port, count, timeout=120):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    sel = selectors.DefaultSelector()
    held, pending, started, errors = [], {}, 0, 0
    deadline = time.monotonic() + timeout
    while (started < count or pending) and time.monotonic() < deadline:
        while started < count and len(pending) < 64:
            raw = socket.socket()
            raw.setblocking(False)
            raw.connect_ex(("127.0.0.1", port))
            s = ctx.wrap_socket(raw, server_hostname="localhost", do_handshake_on_connect=False)
            started += 1
            pending[s] = {"phase": "connect", "data": b""}
            sel.register(s, selectors.EVENT_WRITE)
        for key, _ in sel.select(0.5):
            s = key.fileobj
            r = step(s, pending[s])
            if r in ("done", "failed"):
                sel.unregister(s)
                del pending[s]
                if r == "done":
                    held.append(s)
                else:
                    errors += 1
                    s.close()
            else:
                sel.modify(s, r)
    errors += len(pending)
    for s in pending:
        s.close()
    return held, errors


def still_open(socks):
    """Connections the server has not closed: nothing to read, or only TLS
    records that decrypt to no data (session tickets). poll, not select:
    the fds go far past 1024."""
    poller = select.poll()
    for s in socks:
        poller.register(s, select.POLLIN)
    readable = {fd for fd, _ in poller.poll(0)}
    n = 0
    for s in socks:
        if s.fileno() not in readable:
            n += 1
            continue
        try:
            n += 1 if s.recv(1) else 0
        except ssl.SSLWantReadError:
            n += 1
        except (OSError, ssl.SSLError):
            pass
    return n


def main(port, count):
    socks, errors = hold(port, count)
    time.sleep(1.0)
    print("READY held=%d errors=%d" % (still_open(socks), errors), flush=True)
    sys.stdin.read()
    for s in socks:
        s.close()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
