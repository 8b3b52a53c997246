"""The application of tests/integration/test_messages.py: a WSGI app, an
ASGI one, a factory for each form (--factory, create_app("word")), and
what the worker's environment and logging look like from inside."""
import logging
import os

log = logging.getLogger("msg_app")
log.warning("msg_app imported")


def app(environ, start_response):
    log.warning("msg_app serving %s", environ["PATH_INFO"])
    if environ["PATH_INFO"] == "/env":
        keys = ("MSG_FROM_FILE", "MSG_QUOTED", "MSG_BOTH", "MSG_EXPORTED")
        body = "|".join("%s=%s" % (k, os.environ.get(k)) for k in keys).encode()
    else:
        body = b"msg_app"
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [body]


async def asgi_app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"asgi msg_app"})


def create_app(word="made by the factory"):
    def made(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [word.encode()]
    return made


NOT_CALLABLE = 42
