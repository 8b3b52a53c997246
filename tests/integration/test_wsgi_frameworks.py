"""Real frameworks from Debian's packages, unmodified (tests/fixtures/wsgi/
flask_app.py, django_app.py, webpy_app.py, bottle_app.py, falcon_app.py):
each request goes to spindle and to wsgiref.simple_server serving the same
app; status, body and the headers the app set must match."""
import hashlib
import http.client
import json
import os
import re


from lib.wsgiutil import reference_server, wsgi_server  # noqa: F401  (fixture)

# Headers that are the server's business, not the app's.
SERVER_HEADERS = {"date", "server", "content-length", "transfer-encoding", "connection",
                  "keep-alive"}


def fetch(port, method, path, headers=None, body=None):
    h = {"Host": "127.0.0.1"}
    h.update(headers or {})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        data = r.read()
        return r.status, r.getheaders(), data
    finally:
        conn.close()


class Pair:
    """The same app under wsgiref (ref) and spindle (sp)."""

    def __init__(self, start, spec):
        self.ref = reference_server(start, spec)
        self.sp = start(spec)
        self.mismatches = []

    def compare(self, method, path, headers=None, body=None, mask=None, what=None):
        a = fetch(self.ref.port, method, path, headers, body)
        b = fetch(self.sp.port, method, path, headers, body)
        what = what or "%s %s" % (method, path)

        def norm(resp):
            status, hdrs, data = resp
            hs = sorted((k.lower(), mask(v) if mask else v) for k, v in hdrs
                        if k.lower() not in SERVER_HEADERS)
            cl = [v for k, v in hdrs if k.lower() == "content-length"]
            return status, hs, (mask(data.decode("latin-1")) if mask else data), cl

        na, nb = norm(a), norm(b)
        if na[:3] != nb[:3]:
            self.mismatches.append("%s:\n  wsgiref: %r\n  spindle: %r" % (what, na[:3], nb[:3]))
        if na[3] and nb[3] and na[3] != nb[3]:
            self.mismatches.append("%s: Content-Length %s vs %s" % (what, na[3], nb[3]))
        if method != "HEAD" and nb[3] and int(nb[3][0]) != len(b[2]):
            self.mismatches.append("%s: spindle Content-Length %s, body %d" % (what, nb[3],
                                                                               len(b[2])))
        return b

    def check(self):
        assert not self.mismatches, "\n".join(self.mismatches)


def multipart(fields, files, boundary="----spindle-test-boundary-7MA4YWxkTrZu0gW"):
    out = []
    for name, value in fields:
        out.append(("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n"
                    % (boundary, name, value)).encode())
    for name, filename, ctype, data in files:
        out.append(("--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n"
                    "Content-Type: %s\r\n\r\n" % (boundary, name, filename, ctype)).encode()
                   + data + b"\r\n")
    out.append(("--%s--\r\n" % boundary).encode())
    return b"".join(out), "multipart/form-data; boundary=%s" % boundary


FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def test_flask(wsgi_server):
    p = Pair(wsgi_server, "flask_app:application")
    r = p.compare("GET", "/")
    assert r[0] == 200 and r[2] == b"Hello from Flask"
    p.compare("GET", "/user/bob?page=3")
    p.compare("GET", "/user/caf%C3%A9")
    p.compare("GET", "/nowhere")
    p.compare("GET", "/abort")
    p.compare("GET", "/redirect")
    p.compare("HEAD", "/")
    r = p.compare("GET", "/json")
    assert json.loads(r[2]) == {"a": 1, "list": [1, 2, 3], "text": "caf\u00e9"}
    payload = json.dumps({"k": "v", "n": [1, 2]}).encode()
    r = p.compare("POST", "/json", {"Content-Type": "application/json"}, payload)
    assert json.loads(r[2])["echo"] == {"k": "v", "n": [1, 2]}
    r = p.compare("POST", "/form", FORM, b"name=Ann+Lee&age=33&multi=x&multi=y%26z")
    assert r[2] == b"name=Ann Lee age=33 multi=x,y&z"
    data = os.urandom(300 * 1024)
    body, ctype = multipart([("note", "a note")],
                            [("file", "blob.bin", "application/octet-stream", data)])
    r = p.compare("POST", "/upload", {"Content-Type": ctype}, body)
    up = json.loads(r[2])
    assert up["size"] == len(data) and up["sha"] == hashlib.sha256(data).hexdigest()
    assert up["filename"] == "blob.bin" and up["note"] == "a note"
    r = p.compare("GET", "/setcookie")
    cookies = [v for k, v in r[1] if k.lower() == "set-cookie"]
    assert len(cookies) == 2 and any(c.startswith("flavour=oatmeal") for c in cookies)
    r = p.compare("GET", "/getcookie", {"Cookie": "flavour=oatmeal; session_id=abc123"})
    assert r[2] == b"flavour=oatmeal session_id=abc123"
    r = p.compare("GET", "/stream?n=50&tag=zz")
    assert r[2] == "".join("line %d of zz\n" % i for i in range(50)).encode()
    p.compare("PUT", "/head-and-put", {"Content-Type": "text/plain"}, b"x" * 1000)
    p.compare("DELETE", "/head-and-put")
    p.check()


# Django's random CSRF values: the form's masked token (64 characters) and,
# since Django 4.1, the cookie's unmasked secret (32; it was 64 before).
CSRF_VALUE = re.compile(r"\b[A-Za-z0-9]{64}\b|(?<=csrftoken=)[A-Za-z0-9]{32}\b")
# The CSRF cookie's expiry is a year from the request: the two servers'
# answers straddled a second once (16:49:05 and :06), so it is masked too.
COOKIE_EXPIRES = re.compile(r"(?<=expires=)[^;]+")


def django_form_flow(port):
    """GET the form (a csrftoken cookie and a hidden token), POST it back."""
    status, hdrs, page = fetch(port, "GET", "/person/")
    assert status == 200, page
    cookie = [v for k, v in hdrs if k.lower() == "set-cookie" and v.startswith("csrftoken=")]
    assert cookie, hdrs
    token_cookie = cookie[0].split(";")[0]
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1).decode()
    body = "csrfmiddlewaretoken=%s&name=ada&age=36" % token
    ok = fetch(port, "POST", "/person/", dict(FORM, Cookie=token_cookie), body.encode())
    bad_token = fetch(port, "POST", "/person/", dict(FORM, Cookie=token_cookie),
                      b"csrfmiddlewaretoken=" + b"x" * 64 + b"&name=ada&age=36")
    invalid = fetch(port, "POST", "/person/", dict(FORM, Cookie=token_cookie),
                    ("csrfmiddlewaretoken=%s&name=&age=-3" % token).encode())
    return ok, bad_token, invalid


def test_django(wsgi_server):
    p = Pair(wsgi_server, "django_app:application")
    mask = lambda s: COOKIE_EXPIRES.sub("DATE", CSRF_VALUE.sub("TOKEN", s))  # noqa: E731
    r = p.compare("GET", "/")
    assert r[0] == 200 and r[2] == b"Hello from Django"
    r = p.compare("GET", "/hello/grace%20hopper/")
    assert b"<h1>Hello, Grace Hopper!</h1>" in r[2] and b"<li>3: c</li>" in r[2]
    assert b"&lt;script&gt;" in r[2]
    p.compare("GET", "/hello")            # CommonMiddleware: 404 (no APPEND_SLASH match)
    p.compare("GET", "/meta/?a=1&b=2", {"X-Custom": "yes"})
    p.compare("GET", "/nowhere/")
    r = p.compare("GET", "/person/", mask=mask)
    assert b"csrfmiddlewaretoken" in r[2]
    r = p.compare("POST", "/exempt/?q=1", FORM, b"a=1&a=2&b=%C3%A9")
    assert json.loads(r[2])["post"] == {"a": ["1", "2"], "b": ["\u00e9"]}
    r = p.compare("POST", "/person/", FORM, b"name=x&age=1")   # no token: 403
    assert r[0] == 403
    p.compare("GET", "/hello/x/", {"Host": "evil.example"})     # not in ALLOWED_HOSTS: 400
    results = [django_form_flow(p.ref.port), django_form_flow(p.sp.port)]
    for (ref, sp), what in zip(zip(*results), ("valid POST", "bad token", "invalid form")):
        assert ref[0] == sp[0], (what, ref, sp)
        assert mask(ref[2].decode()) == mask(sp[2].decode()), (what, ref[2], sp[2])
    ok = results[1][0]
    assert ok[0] == 200 and b"Thanks ada, 37 next year" in ok[2], ok
    assert results[1][1][0] == 403
    p.check()


def test_webpy_your_ip(wsgi_server):
    p = Pair(wsgi_server, "webpy_app:application")
    r = p.compare("GET", "/")
    assert r[0] == 200 and r[2] == b"127.0.0.1"
    r = p.compare("GET", "/hello/web?times=3")
    assert r[2] == b"Hello, web!\n" * 3
    p.compare("POST", "/hello/poster", FORM, b"k=v&x=y")
    p.compare("GET", "/missing")
    p.check()


def test_bottle(wsgi_server):
    p = Pair(wsgi_server, "bottle_app:application")
    r = p.compare("GET", "/")
    assert r[2] == b"Hello from Bottle"
    r = p.compare("GET", "/hello/%3Cb%3E?q=1")
    assert r[2] == b"<b>Hello &lt;b&gt;</b>, q=1"
    p.compare("GET", "/json")
    r = p.compare("POST", "/form", FORM, b"a=1&b=two")
    assert r[2] == b"got 1 and two"
    data = os.urandom(100 * 1024)
    body, ctype = multipart([], [("file", "f.dat", "application/octet-stream", data)])
    r = p.compare("POST", "/upload", {"Content-Type": ctype}, body)
    assert json.loads(r[2])["sha"] == hashlib.sha256(data).hexdigest()
    r = p.compare("GET", "/cookie", {"Cookie": "visits=4"})
    assert r[2] == b"visits was 4"
    r = p.compare("GET", "/stream")
    assert r[2] == b"chunk 0\nchunk 1\nchunk 2\nchunk 3\n"
    p.compare("GET", "/redirect")
    p.compare("GET", "/error")
    p.compare("GET", "/nowhere")
    p.compare("HEAD", "/json")
    p.check()


def test_falcon(wsgi_server):
    p = Pair(wsgi_server, "falcon_app:application")
    r = p.compare("GET", "/things?limit=5")
    assert json.loads(r[2]) == {"things": ["a", "b"], "limit": 5}
    r = p.compare("POST", "/things", {"Content-Type": "application/json"},
                  json.dumps({"id": "7", "v": [1]}).encode())
    assert r[0] == 201
    r = p.compare("GET", "/things/42", {"X-Test": "hdr"})
    assert r[2] == b"thing 42, ua=hdr"
    p.compare("GET", "/things/missing")
    p.compare("PUT", "/things/9", {"Content-Type": "text/plain"}, b"y" * 5000)
    r = p.compare("GET", "/stream")
    assert r[2] == b"falcon streams bytes"
    p.compare("GET", "/nope")
    p.compare("POST", "/things", {"Content-Type": "application/json"}, b"{not json")
    p.compare("HEAD", "/things")
    p.check()
