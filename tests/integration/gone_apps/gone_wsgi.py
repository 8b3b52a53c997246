"""A slow WSGI app for test_client_gone.py: it answers after a pause, so
the client can leave first."""
import time


def application(environ, start_response):
    if environ["PATH_INFO"] == "/upload":
        environ["wsgi.input"].read(10)
        time.sleep(0.6)  # the client goes meanwhile
        environ["wsgi.input"].read()
    else:
        time.sleep(0.6)
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"late\n"]
