#!/usr/bin/python3
"""h11_diff.py — the corpus table check and the differential test against h11.

Usage: h11_diff.py VERDICT_BIN CORPUS_DIR WORK_DIR
1. Extracts the corpus (tests/corpus/extract.py) and the request strings of
   tests/unit/test_http_parse.c into WORK_DIR.
2. Runs spindle's verdict driver (tests/diff/verdict.c) on every case and checks
   the corpus cases against tests/corpus/expected.tsv (written by hand).
3. Runs every case through Python's h11 as a server; the framing verdicts
   (accepted or not, requests completed and where each ended) must agree, or the
   case must be listed, with the same two verdicts, in tests/diff/h11_disagreements.tsv.
Prints "N passed, N failed"; exits 1 on any failure.
"""
import hashlib
import os
import re
import subprocess
import sys

import h11

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def read_table(path):
    rows = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            cols = line.rstrip("\n").split("\t")
            rows[cols[0]] = cols[1:]
    return rows


C_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def c_unescape(s):
    out = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        e = s[i + 1]
        if e == "x":
            m = re.match(r"[0-9a-fA-F]+", s[i + 2:])
            out.append(int(m.group(0), 16) & 0xFF)
            i += 2 + len(m.group(0))
        elif e in "01234567":
            m = re.match(r"[0-7]{1,3}", s[i + 1:])
            out.append(int(m.group(0), 8))
            i += 1 + len(m.group(0))
        else:
            out += {"r": b"\r", "n": b"\n", "t": b"\t", '"': b'"', "\\": b"\\"}[e]
            i += 2
    return bytes(out)


def unit_requests(path):
    """The {"request", status} cases of the parser's unit test, C strings joined."""
    with open(path) as f:
        text = f.read()
    for m in re.finditer(r'\{((?:\s*"(?:[^"\\\n]|\\.)*"\s*)+),\s*-?\d+\s*\}', text):
        yield b"".join(c_unescape(s) for s in C_STRING.findall(m.group(1)))


def h11_verdict(data):
    """Same shape as verdict.c: (outcome, completed requests, end offsets)."""
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(data)
    ends = []
    while True:
        try:
            ev = conn.next_event()
        except h11.RemoteProtocolError as e:
            return "%d" % e.error_status_hint, ends
        if ev is h11.NEED_DATA:
            return ("ok" if ends and not conn.trailing_data[0] else "more"), ends
        if isinstance(ev, h11.EndOfMessage):
            ends.append(len(data) - len(conn.trailing_data[0]))
            if conn.their_state is h11.MIGHT_SWITCH_PROTOCOL:
                return "ok", ends
            conn.send(h11.Response(status_code=200, headers=[("Content-Length", "0")]))
            conn.send(h11.EndOfMessage())
            if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                return "ok", ends
            conn.start_next_cycle()
            if not conn.trailing_data[0]:
                return "ok", ends
        elif ev is h11.PAUSED:
            return "ok", ends


def agree(sp, h):
    """Errors agree with errors (statuses may differ), and with h11 still
    waiting when the same requests came before: h11 judges a head only once
    its blank line is in, spindle as soon as a byte is wrong, and neither
    accepted the request. Otherwise outcome and end offsets must match."""
    (so, sn, se), (ho, he) = sp, h
    s_err, h_err = so[0].isdigit(), ho[0].isdigit()
    if s_err and ho == "more":
        return sn == len(he) and se == he
    if s_err or h_err:
        return s_err and h_err and sn == len(he) and se == he
    return so == ho and se == he


def main():
    vbin, corpus, work = sys.argv[1:4]
    cases = subprocess.run([sys.executable, os.path.join(ROOT, "tests/corpus/extract.py"), corpus,
                            work], check=True, capture_output=True, text=True).stdout.split()
    os.makedirs(os.path.join(work, "unit"), exist_ok=True)
    for req in unit_requests(os.path.join(ROOT, "tests/unit/test_http_parse.c")):
        cid = "unit/" + hashlib.sha1(req).hexdigest()[:10]
        if cid in cases:
            continue
        with open(os.path.join(work, cid), "wb") as f:
            f.write(req)
        cases.append(cid)
    out = subprocess.run([vbin] + cases, cwd=work, check=True, capture_output=True,
                         text=True).stdout
    spindle = {}
    for line in out.splitlines():
        cid, verdict, ends = line.split("\t")
        outcome, n = verdict.split()
        spindle[cid] = (outcome, int(n), [int(x) for x in ends.split(",") if x])

    expected = read_table(os.path.join(ROOT, "tests/corpus/expected.tsv"))
    listed = read_table(os.path.join(HERE, "h11_disagreements.tsv"))
    passed = failed = 0
    for cid in cases:
        outcome, n, ends = spindle[cid]
        if not cid.startswith("unit/"):
            want = expected.get(cid, ["(missing)"])[0]
            if want == "%s %d" % (outcome, n):
                passed += 1
            else:
                failed += 1
                print("table: %s: spindle %s %d, table %s" % (cid, outcome, n, want))
        with open(os.path.join(work, cid), "rb") as f:
            h = h11_verdict(f.read())
        s_text = "%s %d %s" % (outcome, n, ",".join(map(str, ends)))
        h_text = "%s %d %s" % (h[0], len(h[1]), ",".join(map(str, h[1])))
        if agree(spindle[cid], h):
            if cid in listed:
                failed += 1
                print("h11: %s now agrees (%s); drop it from h11_disagreements.tsv" % (cid, s_text))
            else:
                passed += 1
        elif cid in listed and listed[cid][0] == s_text and listed[cid][1] == h_text:
            passed += 1
        else:
            failed += 1
            print("h11: %s\tspindle %s\th11 %s" % (cid, s_text, h_text))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
