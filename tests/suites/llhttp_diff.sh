#!/bin/bash
# llhttp_diff.sh — the request corpus (tests/corpus) through Node's own strict
# HTTP/1.1 parser (llhttp, tests/diff/llhttp_diff.js: a real node http server)
# and through spindle (the real server over a socket, and its framing verdict
# from tests/diff/verdict.c). Per case:
#  - framing: for every request both completed, method, target and body bytes
#    must be the same (where one request ends) — a difference is a hard failure
#    that no table entry excuses;
#  - verdict: accept/reject and the number of requests completed must agree, or
#    the case must be listed, with both verdicts, in tests/diff/llhttp_disagreements.tsv
#    (with the RFC 9112/9110 clause that makes spindle right); a listed case that
#    now agrees or disagrees differently fails too;
#  - the server answers what the verdict says (a response per request; a
#    rejected request's status last).
# The corpus is tests/corpus (or $SPINDLE_CORPUS); without it the suite fails.
# Ends with "N passed, N failed".
. "$(dirname "$0")/lib/preamble.sh"

need_corpus || finish
if ! command -v node >/dev/null || [ ! -x build/spindle ]; then
  abort "needs node and build/spindle"
fi
cc -std=c11 -D_GNU_SOURCE -O1 -Wall -Wextra -Werror -Isrc -o "$work/verdict" \
  tests/diff/verdict.c src/http/http_parse.c src/http/http_chunked.c src/http/http_chars.c \
  || abort "cannot build tests/diff/verdict.c"
"$PY" tests/corpus/extract.py "$CORPUS" "$work/cases" >"$work/ids"
(cd "$work/cases" && xargs "$work/verdict" <"$work/ids") >"$work/spindle.tsv"
timeout 120 node tests/diff/llhttp_diff.js "$work/cases" "$work/ids" >"$work/node.jsonl" \
  || abort "the node driver failed"
port=$(free_port)
build/spindle --bind "127.0.0.1:$port" --workers 0 --header-timeout 1 --body-timeout 1 \
  --keepalive-timeout 1 --linger-timeout 0.2 >/dev/null 2>"$work/err.log" &
pid=$!
counted timeout 150 "$PY" - "$work" "$port" tests/diff/llhttp_disagreements.tsv <<'PY'
import json, os, re, socket, sys, time
work, port, table = sys.argv[1], int(sys.argv[2]), sys.argv[3]
addr = ("127.0.0.1", port)
end = time.monotonic() + 10
while True:
    try:
        socket.create_connection(addr, timeout=1).close()
        break
    except OSError:
        if time.monotonic() > end:
            print("spindle did not start"); print("0 passed, 1 failed"); sys.exit(1)
        time.sleep(0.05)

ids = open(os.path.join(work, "ids")).read().split()
sp = {}
for line in open(os.path.join(work, "spindle.tsv")):
    cid, verdict, ends = line.rstrip("\n").split("\t")
    outcome, n = verdict.split()
    sp[cid] = (outcome, int(n), [int(x) for x in ends.split(",") if x])
nd = {}
for line in open(os.path.join(work, "node.jsonl")):
    r = json.loads(line)
    nd[r["id"]] = r
listed = {}
for line in open(table):
    if line.startswith("#") or not line.strip():
        continue
    cols = line.rstrip("\n").split("\t")
    listed[cols[0]] = cols[1:]


def chunked_len(b):
    total, i = 0, 0
    while True:
        j = b.index(b"\r\n", i)
        size = int(b[i:j].split(b";")[0].strip(), 16)
        i = j + 2
        if size == 0:
            return total
        total += size
        i += size + 2


def spindle_requests(data, ends):
    """method, target and body bytes of each request spindle completed."""
    out, start = [], 0
    for e in ends:
        while data[start:start + 2] == b"\r\n":
            start += 2
        he = data.index(b"\r\n\r\n", start) + 4
        head = data[start:he]
        line = head.split(b"\r\n", 1)[0].split(b" ")
        body = data[he:e]
        if re.search(rb"\r\ntransfer-encoding:[ \t]*[^\r]*chunked", head, re.I):
            blen = chunked_len(body)
        else:
            blen = len(body)
        out.append((line[0].decode("latin-1"), line[1].decode("latin-1") if len(line) > 1 else "", blen))
        start = e
    return out


def server_statuses(data):
    s = socket.create_connection(addr, timeout=3)
    try:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    buf = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            buf += d
    except OSError:
        pass
    s.close()
    return [int(m.group(1)) for m in re.finditer(rb"HTTP/1\.[01] (\d{3}) ", buf)]


passed = failed = 0
def fail(msg):
    global failed
    failed += 1
    print("FAIL " + msg)

agreed = disagreed = 0
for cid in ids:
    data = open(os.path.join(work, "cases", cid), "rb").read()
    outcome, n, ends = sp[cid]
    node = nd.get(cid)
    if node is None:
        fail("%s: no node verdict" % cid)
        continue
    sreqs = spindle_requests(data, ends)
    nreqs = [(r["m"], r["u"], r["b"]) for r in node["reqs"]]
    # 1. Framing: the requests both completed are the same requests.
    frame_ok = True
    for i, (a, b) in enumerate(zip(sreqs, nreqs)):
        if node["reqs"][i]["up"]:
            a, b = a[:2], b[:2]  # an upgrade's body is the new protocol's
        if a != b:
            frame_ok = False
            fail("%s: FRAMING request %d: spindle %r, node %r" % (cid, i + 1, a, b))
            break
    if not frame_ok:
        continue
    # 2. Verdict.
    s_v = "%s %d" % (outcome, n)
    n_out = node["err"] or "ok"
    n_v = "%s %d" % (n_out, len(nreqs))
    s_acc = outcome == "ok"
    n_acc = node["err"] is None
    same = (n == len(nreqs)) and (s_acc == n_acc or (outcome == "more" and not n_acc))
    if s_acc and n_acc and n != len(nreqs):
        # Both accepted everything yet counted different requests: framing.
        fail("%s: FRAMING: spindle %s, node %s" % (cid, s_v, n_v))
        continue
    if same:
        agreed += 1
        if cid in listed:
            fail("%s: listed in the table but now agrees (%s / %s)" % (cid, s_v, n_v))
        else:
            passed += 1
    else:
        disagreed += 1
        row = listed.get(cid)
        if row is None:
            fail("%s: spindle %s, node %s (not in %s)" % (cid, s_v, n_v, table))
        elif row[0] != s_v or row[1] != n_v:
            fail("%s: spindle %s, node %s; the table says %s / %s" % (cid, s_v, n_v, row[0], row[1]))
        else:
            passed += 1
    # 3. The real server answers as its verdict says.
    st = server_statuses(data)
    if outcome[0].isdigit():
        # The error status, or (a bad body after a head the route answered
        # without reading it) the route's answer, then the close.
        good = len(st) == n + 1 and (st[-1] == int(outcome) or "\r\n\r\n" in data.decode("latin-1"))
    else:
        # ok / more: an answer per completed request; after an Upgrade the
        # server declined, later bytes are parsed as HTTP (a 400 may follow).
        good = len(st) >= n
    if good:
        passed += 1
    else:
        fail("%s: server answered %s, verdict %s" % (cid, st, s_v))
print("llhttp_diff: %d cases, %d verdicts agree, %d disagree (listed)" % (len(ids), agreed, disagreed))
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
PY
kill -TERM "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
pid=
finish
