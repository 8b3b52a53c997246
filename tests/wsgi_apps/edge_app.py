"""Edge cases of the HTTP layer under WSGI (tests/integration/test_wsgi_edge.py):
an application answering with a 1xx status (refused: 500), and the host an
absolute-form request is for (its authority, not Host)."""


def interim_100(environ, start_response):
    start_response("100 Continue", [])
    return [b"should not be sent"]


def interim_101(environ, start_response):
    start_response("101 Switching Protocols", [])
    return [b"should not be sent"]


def interim_103(environ, start_response):
    start_response("103 Early Hints", [("Link", "</a.css>; rel=preload")])
    return [b"should not be sent"]


def ok(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]


def host(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [("%s %s %s" % (environ.get("HTTP_HOST"), environ["SERVER_NAME"],
                           environ["SERVER_PORT"])).encode()]


ROUTES = {k: v for k, v in globals().items() if callable(v) and not k.startswith("_")}


def application(environ, start_response):
    fn = ROUTES.get(environ["PATH_INFO"].strip("/"), None)
    if fn is None:
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"no such route"]
    return fn(environ, start_response)
