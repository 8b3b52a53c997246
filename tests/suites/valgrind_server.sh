#!/bin/bash
# valgrind_server.sh — build/spindle --workers 0 under valgrind memcheck for a
# short mixed run (a few hundred requests: keep-alive, close, pipelined,
# chunked and counted uploads through /echo, /sleep, malformed requests,
# resets), then SIGTERM: no memcheck error (--error-exitcode), no definite or
# indirect leak. Ends with "N passed, N failed".
. "$(dirname "$0")/lib/preamble.sh"

command -v valgrind >/dev/null || abort "valgrind not installed"
port=$(free_port)
valgrind --tool=memcheck --error-exitcode=1 --leak-check=full --show-leak-kinds=definite,indirect \
  --errors-for-leak-kinds=definite,indirect --log-file="$work/vg.log" \
  build/spindle --bind "127.0.0.1:$port" --workers 0 --keepalive-timeout 1 --header-timeout 2 \
  --body-timeout 2 --linger-timeout 0.3 --graceful-timeout 2 >/dev/null 2>"$work/err.log" &
pid=$!

if timeout 60 "$PY" - "$port" <<'PY'; then ok "mixed requests under memcheck"; else bad "mixed requests under memcheck"; fi
import re, socket, struct, sys, time
port = int(sys.argv[1])
addr = ("127.0.0.1", port)
end = time.monotonic() + 30
while True:  # valgrind starts slowly
    try:
        with socket.create_connection(addr, timeout=2) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            if s.recv(16).startswith(b"HTTP/1.1 200"):
                break
    except OSError:
        pass
    if time.monotonic() > end:
        sys.exit("spindle did not start under valgrind")
    time.sleep(0.2)

def read(s, buf=b""):
    while b"\r\n\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            raise EOFError(buf[:80])
        buf += d
    head, _, rest = buf.partition(b"\r\n\r\n")
    if re.search(rb"transfer-encoding:\s*chunked", head, re.I):
        body = b""
        while True:
            while b"\r\n" not in rest:
                d = s.recv(65536)
                if not d:
                    raise EOFError("chunk")
                rest += d
            line, _, rest = rest.partition(b"\r\n")
            size = int(line.split(b";")[0], 16)
            while len(rest) < size + 2:
                d = s.recv(65536)
                if not d:
                    raise EOFError("chunk data")
                rest += d
            body += rest[:size]
            rest = rest[size + 2:]
            if size == 0:
                return int(head.split()[1]), body, rest
    m = re.search(rb"content-length:\s*(\d+)", head, re.I)
    n = int(m.group(1)) if m else 0
    while len(rest) < n:
        d = s.recv(65536)
        if not d:
            raise EOFError("body")
        rest += d
    return int(head.split()[1]), rest[:n], rest[n:]

count = 0
def expect(st, want):
    global count
    count += 1
    if st != want:
        sys.exit("status %d, want %d" % (st, want))

# Keep-alive and pipelined.
with socket.create_connection(addr, timeout=10) as s:
    left = b""
    for i in range(100):
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        st, body, left = read(s, left)
        expect(st, 200)
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 50)
    for i in range(50):
        st, body, left = read(s, left)
        expect(st, 200)
# Connection: close, /sleep.
for i in range(40):
    with socket.create_connection(addr, timeout=10) as s:
        s.sendall(b"GET /sleep?ms=2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        expect(read(s)[0], 200)
# Uploads: counted and chunked.
for i in range(40):
    n = [0, 1, 1000, 70000, 300000][i % 5]
    with socket.create_connection(addr, timeout=20) as s:
        if i % 2:
            s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % n + b"u" * n)
        else:
            data = b"u" * n
            ch = b"".join(b"%x\r\n%s\r\n" % (len(data[j:j+5000]), data[j:j+5000]) for j in range(0, n, 5000))
            s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + ch + b"0\r\n\r\n")
        st, body, _ = read(s)
        expect(st, 200)
        if len(body) != n:
            sys.exit("echo %d of %d" % (len(body), n))
# Malformed requests.
bad = [(b"GET / HTTP/1.1\r\n\r\n", 400), (b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505),
       (b"GET /" + b"x" * 9000 + b" HTTP/1.1\r\nHost: a\r\n\r\n", 414),
       (b"GET / HTTP/1.1\r\nHost: a\r\nX: " + b"y" * 9000 + b"\r\n\r\n", 431),
       (b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
       (b"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: br, chunked\r\n\r\n", 501),
       (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n", 400)]
for i in range(50):
    req, want = bad[i % len(bad)]
    with socket.create_connection(addr, timeout=10) as s:
        s.sendall(req)
        expect(read(s)[0], want)
# Resets mid-head, mid-body, mid-response.
for i in range(30):
    s = socket.create_connection(addr, timeout=10)
    s.sendall([b"GET / HTTP/1.1\r\nHo", b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 9999\r\n\r\nab",
               b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 30][i % 3])
    time.sleep(0.01)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
# Still serving.
with socket.create_connection(addr, timeout=10) as s:
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    expect(read(s)[0], 200)
print("%d requests checked" % count)
PY

kill -TERM "$pid" 2>/dev/null
rc=0
for _ in $(seq 1 100); do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then
  bad "spindle stops on TERM under valgrind"
  kill -KILL "$pid"
fi
wait "$pid"
rc=$?
pid=
if [ "$rc" -eq 0 ]; then
  ok "memcheck: no errors, no definite or indirect leaks"
else
  bad "memcheck (exit $rc)"
  grep -v '^==[0-9]*== *$' "$work/vg.log" | tail -60
  tail -5 "$work/err.log"
fi
grep -E "ERROR SUMMARY|definitely lost|indirectly lost" "$work/vg.log" | sed 's/^==[0-9]*== /  /'
finish
