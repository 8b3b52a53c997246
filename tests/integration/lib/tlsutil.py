"""Certificates for the TLS tests, made once per test session with the
openssl command in a temporary directory: a CA; server certificates for
"localhost" (ECDSA P-256, and an RSA one), "a.test" and "b.test" (with
SAN names, b.test with a wildcard *.b.test); a client certificate signed
by the CA and one signed by another CA (to be refused). Plus the client
contexts and a curl that trusts the CA."""
import pathlib
import socket
import ssl
import subprocess
import tempfile

import pytest

from lib.client import read_until_close

OPENSSL = "/usr/bin/openssl"


def unverified_ctx():
    """A client context that takes any certificate (the tests check the
    served one themselves)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    return ctx


def https_get(port, path="/", ctx=None, session=None, timeout=5):
    """One GET on a new TLS connection to 127.0.0.1:port: (status, body,
    whether it resumed, its session, the server certificate's DER)."""
    ctx = ctx or unverified_ctx()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost", session=session) as s:
            s.sendall(b"GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n" % path.encode())
            data = read_until_close(s, timeout)
            head, _, body = data.partition(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.") else 0
            return status, body, s.session_reused, s.session, s.getpeercert(binary_form=True)


def _run(*args, cwd):
    subprocess.run([OPENSSL] + list(args), cwd=cwd, check=True, capture_output=True, timeout=60)


class Certs:
    def __init__(self, d):
        self.dir = pathlib.Path(d)
        self._ca("ca")
        self._ca("otherca")
        self.server("localhost", ["localhost", "127.0.0.1"], "ec")
        self.server("rsa", ["localhost", "127.0.0.1"], "rsa")
        self.server("a", ["a.test", "www.a.test"], "ec")
        self.server("b", ["b.test", "*.b.test"], "ec")
        self.client("client", "ca")
        self.client("stranger", "otherca")

    def path(self, name):
        return str(self.dir / name)

    def _key(self, name, kind):
        if kind == "rsa":
            _run("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out",
                 name + ".key", cwd=self.dir)
        else:
            _run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
                 name + ".key", cwd=self.dir)

    def _ca(self, name):
        self._key(name, "ec")
        _run("req", "-x509", "-new", "-key", name + ".key", "-subj", "/CN=spindle test %s" % name,
             "-days", "2", "-out", name + ".pem", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=self.dir)

    def _sign(self, name, ca, ext):
        (self.dir / (name + ".ext")).write_text(ext)
        _run("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
             "-CAcreateserial", "-days", "2", "-out", name + ".crt", "-extfile", name + ".ext",
             cwd=self.dir)

    def server(self, name, names, kind):
        self._key(name, kind)
        _run("req", "-new", "-key", name + ".key", "-subj", "/CN=%s/O=spindle tests" % names[0],
             "-out", name + ".csr", cwd=self.dir)
        alt = ",".join(("IP:" if n[0].isdigit() else "DNS:") + n for n in names)
        self._sign(name, "ca", "subjectAltName=%s\nextendedKeyUsage=serverAuth\n" % alt)

    def client(self, name, ca):
        self._key(name, "ec")
        _run("req", "-new", "-key", name + ".key", "-subj", "/CN=%s/O=spindle tests" % name,
             "-out", name + ".csr", cwd=self.dir)
        self._sign(name, ca, "extendedKeyUsage=clientAuth\n")

    def cert(self, name):
        return self.path(name + ".crt")

    def key(self, name):
        return self.path(name + ".key")

    @property
    def ca(self):
        return self.path("ca.pem")

    def flags(self, *names):
        """--certfile/--keyfile pairs for these server certificates."""
        out = []
        for n in names or ("localhost",):
            out += ["--certfile", self.cert(n), "--keyfile", self.key(n)]
        return out

    def context(self, minv=None, maxv=None, alpn=None, client=None):
        """A client SSLContext trusting the CA."""
        ctx = ssl.create_default_context(cafile=self.ca)
        if minv:
            ctx.minimum_version = minv
        if maxv:
            ctx.maximum_version = maxv
        if alpn:
            ctx.set_alpn_protocols(alpn)
        if client:
            ctx.load_cert_chain(self.cert(client), self.key(client))
        return ctx


@pytest.fixture(scope="session")
def certs():
    with tempfile.TemporaryDirectory(prefix="spindle-tls-") as d:
        yield Certs(d)
