"""For test_wsgi_inline: /who?s=SECONDS sleeps cooperatively, then says
which greenlet served it and whether the app was in a request; /fail
sleeps, then raises; /raw?s=SECONDS sleeps in a greenlet of the app's own
(its result comes back through switch()). The hub runs a call itself when no other runs on it
(python/_spindle/common/hub.c, run_inline), the others in pooled greenlets."""
import json

import greenlet

import spindle


def application(environ, start_response):
    secs = float(environ.get("QUERY_STRING", "").partition("=")[2] or 0)
    me = greenlet.getcurrent()
    if environ["PATH_INFO"] == "/raw":
        got = greenlet.greenlet(lambda: spindle.sleep(secs) or "slept in my greenlet").switch()
        body = json.dumps({"got": got, "same_after_wait": greenlet.getcurrent() is me}).encode()
        start_response("200 OK", [("Content-Type", "application/json")])
        return [body]
    if secs:
        spindle.sleep(secs)
    if environ["PATH_INFO"] == "/fail":
        raise ValueError("failing after a wait, as asked")
    body = json.dumps({"g": id(me), "same_after_wait": greenlet.getcurrent() is me,
                       "in_request": spindle.in_request()}).encode()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [body]
