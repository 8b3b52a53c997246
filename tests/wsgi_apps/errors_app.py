"""Applications that break PEP 3333 in one way each: the server must answer
500, log the traceback, and keep serving. /pid tells which worker answered."""
import os


def ok(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok %d" % os.getpid()]


def raises(environ, start_response):
    raise ZeroDivisionError("app-bug-in-raises")


def raises_after_start(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    raise KeyError("app-bug-after-start")


def status_noreason(environ, start_response):
    start_response("200", [("Content-Type", "text/plain")])
    return [b"should not be sent"]


def status_abc(environ, start_response):
    start_response("abc", [("Content-Type", "text/plain")])
    return [b"should not be sent"]


def status_bytes(environ, start_response):
    start_response(b"200 OK", [("Content-Type", "text/plain")])
    return [b"should not be sent"]


def header_crlf(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("X-Injected", "a\r\nSet-Cookie: evil=1")])
    return [b"should not be sent"]


def header_lf(environ, start_response):
    start_response("200 OK", [("X-Injected", "a\nb")])
    return [b"should not be sent"]


def header_nontuple(environ, start_response):
    start_response("200 OK", [["Content-Type", "text/plain"]])
    return [b"should not be sent"]


def header_not_list(environ, start_response):
    start_response("200 OK", (("Content-Type", "text/plain"),))
    return [b"should not be sent"]


def header_hop(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Connection", "close")])
    return [b"should not be sent"]


def header_bad_name(environ, start_response):
    start_response("200 OK", [("Bad Name", "x")])
    return [b"should not be sent"]


def str_body_list(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return ["a str, not bytes"]


def str_body_gen(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return iter(["a str, not bytes", "another"])


def str_body_bare(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return "a str as the iterable"


def no_start_response(environ, start_response):
    return [b"no start_response"]


def no_start_response_gen(environ, start_response):
    return iter([b"a", b"b"])


def returns_none(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return None


def write_str(environ, start_response):
    write = start_response("200 OK", [("Content-Type", "text/plain")])
    write("str to write()")
    return []


def second_start_response(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    start_response("201 Created", [("Content-Type", "text/plain")])
    return [b"x"]


ROUTES = {k: v for k, v in globals().items() if callable(v) and not k.startswith("_")}


def application(environ, start_response):
    fn = ROUTES.get(environ["PATH_INFO"].strip("/"), None)
    if fn is None:
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"no such route"]
    return fn(environ, start_response)
