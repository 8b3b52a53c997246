"""Helpers for the spindle.patch() tests: a slow local HTTP(S) server in a
thread of the test process (each request sleeps, so N concurrent outbound
calls take ~1x the delay only if the app's worker waits cooperatively), a
self-signed certificate, and N concurrent GETs."""
import http.client
import http.server
import json
import ssl
import subprocess
import threading
import time

from lib.wsgiutil import concurrent_get, http_get


class SlowHandler(http.server.BaseHTTPRequestHandler):
    delay = 0.5

    def do_GET(self):
        time.sleep(self.delay)
        body = b"slow:" + self.path.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


class SlowServer:
    """ThreadingHTTPServer on 127.0.0.1:<free port>, TLS if cert is given."""

    def __init__(self, cert=None):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SlowHandler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        if cert:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(cert[0], cert[1])
            # Handshake in the handler's thread, not the accept loop.
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True,
                                                do_handshake_on_connect=False)
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def self_signed(dirpath):
    """(cert, key) paths for CN=localhost, IP 127.0.0.1, valid one day."""
    cert, key = str(dirpath / "cert.pem"), str(dirpath / "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", cert, "-days", "1", "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=30)
    return cert, key


def get_json(port, path, timeout=30):
    status, body = http_get(port, path, timeout)
    return status, json.loads(body)


def concurrent_json(port, paths, timeout=30):
    """GETs every path at once (a thread each); (seconds, [(status, json)])."""
    return concurrent_get(port, paths, timeout, get=get_json)
