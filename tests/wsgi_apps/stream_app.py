"""Large bodies both ways: /upload reads wsgi.input in 64 KB pieces and
answers its length and SHA-256; /download streams MB chunks of 1 MB."""
import hashlib
from urllib.parse import parse_qs


def chunk(i):
    """The i-th 1 MB chunk: distinct per i, so a lost or repeated chunk shows."""
    return hashlib.sha256(b"%d" % i).digest() * 32768


def application(environ, start_response):
    path = environ["PATH_INFO"]
    q = {k: v[0] for k, v in parse_qs(environ["QUERY_STRING"]).items()}
    if path == "/upload":
        inp = environ["wsgi.input"]
        h = hashlib.sha256()
        n = 0
        biggest = 0
        while True:
            b = inp.read(65536)
            if not b:
                break
            biggest = max(biggest, len(b))
            n += len(b)
            h.update(b)
        body = ("%d %s %d" % (n, h.hexdigest(), biggest)).encode()
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [body]
    if path == "/download":
        mb = int(q.get("mb", "50"))
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        return (chunk(i) for i in range(mb))
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b"no"]
