"""A mix for the memory test: hello, environ, echo POST, a generator with
close(), an error (500); /stats reports close() calls and object counts."""
import gc
import json
import sys

STATS = {"closed": 0, "gens": 0}


def hello(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"Hello world!"]


def env(environ, start_response):
    body = repr(sorted((k, v) for k, v in environ.items() if isinstance(v, str))).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


def echo(environ, start_response):
    data = environ["wsgi.input"].read()
    start_response("200 OK", [("Content-Type", "application/octet-stream")])
    return [data]


def gen(environ, start_response):
    STATS["gens"] += 1
    start_response("200 OK", [("Content-Type", "text/plain")])

    def g():
        try:
            for i in range(5):
                yield b"item %d\n" % i
        finally:
            STATS["closed"] += 1
    return g()


def error(environ, start_response):
    raise ValueError("intentional error for the memory test")


def stats(environ, start_response):
    gc.collect()
    out = dict(STATS, objects=len(gc.get_objects()),
               blocks=sys.getallocatedblocks())
    body = json.dumps(out).encode()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [body]


ROUTES = {"/hello": hello, "/env": env, "/echo": echo, "/gen": gen, "/error": error,
          "/stats": stats}


def application(environ, start_response):
    return ROUTES[environ["PATH_INFO"]](environ, start_response)
