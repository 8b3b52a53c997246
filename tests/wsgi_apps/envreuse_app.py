"""For test_wsgi_environ_reuse: every answer reports what this call's environ
holds, and the app then changes it or keeps it, in turns decided by a
counter (the head stays the same, so the binding may hand the last environ
back: python/_spindle/wsgi/environ.c, environ_reuse). /mut changes its environ
and lets it go; /held keeps its environ and changes the kept one during the
next call; /input reads half its body with readline on odd calls; /sess
asks for the session handle; /port reports REMOTE_PORT."""
import json

import spindle
from spindle import _spindle

_calls = {"n": 0}
_held = []


def _report(environ):
    return {
        "clean": "test.added" not in environ and "test.late" not in environ,
        "x_test": environ.get("HTTP_X_TEST"),
        "path": environ.get("PATH_INFO"),
        "remote_port": environ.get("REMOTE_PORT"),
        "in_request": spindle.in_request(),
    }


def application(environ, start_response):
    _calls["n"] += 1
    path = environ["PATH_INFO"]
    if _held:  # the environ kept by the last /held: changed after its call
        _held.pop()["test.late"] = 1
    report = _report(environ)
    if path == "/mut":
        environ["test.added"] = 1
        environ["HTTP_X_TEST"] = "changed by the app"
        del environ["PATH_INFO"]
    elif path == "/held":
        _held.append(environ)
    elif path == "/input":
        inp = environ["wsgi.input"]
        report["body"] = (inp.readline() if _calls["n"] % 2 else inp.read()).decode()
    elif path == "/sess":
        try:
            _spindle._session_open(environ)
            report["session"] = "opened"
        except RuntimeError as e:
            report["session"] = str(e)
    body = json.dumps(report).encode()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [body]
