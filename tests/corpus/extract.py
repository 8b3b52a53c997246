#!/usr/bin/python3
"""extract.py — turns the request corpus (tests/corpus) into raw request files.

Usage: extract.py CORPUS_DIR OUT_DIR. Writes OUT_DIR/<case id> (raw bytes) and
prints one case id per line. Ids: gunicorn/valid/001, llhttp/<file>/<n> (n:
the n-th ```http block of that markdown file, from 1). Conversion only: the
notation of each source is undone, nothing is judged here.
"""
import os
import re
import sys


def gunicorn_bytes(raw):
    # gunicorn's notation: real newlines are layout; \r \n \t \0 \xHH escapes.
    data = raw.replace(b"\n", b"")
    return re.sub(rb"\\(x[0-9A-Fa-f]{2}|[rnt0])", _gunicorn_escape, data)


def _gunicorn_escape(m):
    e = m.group(1)
    if e.startswith(b"x"):
        return bytes([int(e[1:], 16)])
    return {b"r": b"\r", b"n": b"\n", b"t": b"\t", b"0": b"\0"}[e]


def llhttp_bytes(block):
    # llhttp's md-test conversion: "\" before a newline joins lines, real
    # newlines become CRLF, then \r \n \t \f \xHH and octal \NNN escapes.
    # Literal non-ASCII text stays UTF-8; escapes give single octets.
    s = re.sub(rb"\\(\r\n|\r|\n)", b"", block.encode("utf-8"))
    s = re.sub(rb"\r\n|\r|\n", b"\r\n", s)
    return re.sub(rb"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|[rntf])", _llhttp_escape, s)


def _llhttp_escape(m):
    e = m.group(1)
    if e.startswith(b"x"):
        return bytes([int(e[1:], 16)])
    if e[:1].isdigit():
        return bytes([int(e, 8) & 0xFF])
    return {b"r": b"\r", b"n": b"\n", b"t": b"\t", b"f": b"\f"}[e]


def llhttp_cases(text):
    # Each ```http block, its heading and its meta comment.
    heading, meta = "", ""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif line.startswith("<!-- meta="):
            meta = line
        elif line.strip() == "```http":
            j = i + 1
            while lines[j].strip() != "```":
                j += 1
            yield heading, meta, "\n".join(lines[i + 1:j])
            meta = ""
            i = j
        i += 1


def main():
    corpus, out = sys.argv[1], sys.argv[2]
    for kind in ("valid", "invalid"):
        d = os.path.join(corpus, "gunicorn-requests", kind)
        os.makedirs(os.path.join(out, "gunicorn", kind), exist_ok=True)
        for name in sorted(os.listdir(d)):
            if not name.endswith(".http"):
                continue
            with open(os.path.join(d, name), "rb") as f:
                data = gunicorn_bytes(f.read())
            cid = "gunicorn/%s/%s" % (kind, name[:-5])
            with open(os.path.join(out, cid), "wb") as f:
                f.write(data)
            print(cid)
    d = os.path.join(corpus, "llhttp-request-fixtures")
    for name in sorted(os.listdir(d)):
        if not name.endswith(".md"):
            continue
        stem = name[:-3]
        os.makedirs(os.path.join(out, "llhttp", stem), exist_ok=True)
        with open(os.path.join(d, name), encoding="utf-8") as f:
            text = f.read()
        for n, (heading, meta, block) in enumerate(llhttp_cases(text), 1):
            cid = "llhttp/%s/%d" % (stem, n)
            with open(os.path.join(out, cid), "wb") as f:
                f.write(llhttp_bytes(block))
            if len(sys.argv) > 3:
                print("%s\t%s\t%s" % (cid, heading, meta))
            else:
                print(cid)


if __name__ == "__main__":
    main()
