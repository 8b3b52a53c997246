"""What a WSGI application sees of TLS (tests/integration/test_tls.py):
the scheme and mod_ssl's variables of its request, as JSON; /file?PATH
sends a file through wsgi.file_wrapper."""
import json

KEYS = ("wsgi.url_scheme", "HTTPS", "SSL_PROTOCOL", "SSL_CIPHER", "SSL_CLIENT_VERIFY",
        "SSL_CLIENT_S_DN", "SERVER_PORT")


def application(environ, start_response):
    if environ["PATH_INFO"] == "/file":  # wsgi.file_wrapper: sendfile, or the record layer
        f = open(environ["QUERY_STRING"], "rb")
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        return environ["wsgi.file_wrapper"](f, 1 << 16)
    body = json.dumps({k: environ.get(k) for k in KEYS}).encode()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [body]
