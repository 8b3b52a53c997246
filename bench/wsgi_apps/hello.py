"""The seed WSGI hello world (issue 8): no Content-Length from the app; a
one-element list, which a fast server measures itself."""


def application(environ, start_response):
    start_response('200 OK', [('Content-Type', 'text/plain')])
    return [b'Hello world!']
