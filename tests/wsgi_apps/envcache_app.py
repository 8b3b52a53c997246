"""For test_wsgi_environ_cache: reports what its environ holds, then changes
it (a key added, one replaced, one removed, the input read), so the test can
see that a repeated head's environ starts clean each time. /keep holds on to
its start_response, write, wsgi.input and spindle.request; /late reports
whether the next request got any of them, and what the kept write does.
/echo/N answers its own path (/echo/N/nap after a cooperative sleep); /kw
calls start_response by keyword, after four wrong calls; /hdr sends one
constant header pair, /hdr?bad adds a hop-by-hop one."""
import json

_previous = []  # the last environ and input stay alive: their ids cannot be reused


_kept = {}
_TEXT = ("Content-Type", "text/plain")  # one object: the binding may remember it checked


def _late(environ, start_response):
    write = start_response("200 OK", [("Content-Type", "application/json")])
    mine = {"start_response": start_response, "write": write,
            "input": environ["wsgi.input"], "request": environ.get("spindle.request")}
    report = {"reused": sorted(k for k, v in mine.items() if v is _kept.get(k))}
    try:
        _kept["write"](b"late")
        report["late_write"] = "no error"
    except RuntimeError as e:
        report["late_write"] = str(e)
    return [json.dumps(report).encode()]


def application(environ, start_response):
    if environ["PATH_INFO"] == "/keep":
        write = start_response("200 OK", [("Content-Type", "text/plain")])
        _kept.update(start_response=start_response, write=write, input=environ["wsgi.input"],
                     request=environ.get("spindle.request"))
        return [b"kept"]
    if environ["PATH_INFO"] == "/late":
        return _late(environ, start_response)
    if environ["PATH_INFO"] == "/kw":  # start_response by keyword, and its wrong calls
        errors = []
        for args, kw in [((), {}), (("200 OK",), {}), (("200 OK", [], None, 1), {}),
                         (("200 OK", []), {"bogus": 1})]:
            try:
                start_response(*args, **kw)
                errors.append("accepted")
            except TypeError as e:
                errors.append("TypeError")
        body = json.dumps(errors).encode()
        start_response(headers=[("Content-Type", "application/json")], status="200 OK",
                       exc_info=None)
        return [body]
    if environ["PATH_INFO"] == "/hdr":  # a pair checked before, then with a bad one
        # hop-by-hop: refused by the WSGI checks alone (the core would send it)
        bad = [("Keep-Alive", "timeout=5")] if environ.get("QUERY_STRING") == "bad" else []
        start_response("200 OK", [_TEXT] + bad)
        return [b"hdr"]
    if environ["PATH_INFO"].startswith("/echo/"):  # /echo/N/nap: a cooperative wait first
        if environ["PATH_INFO"].endswith("/nap"):
            import spindle
            spindle.sleep(0.005)
        body = environ["PATH_INFO"].encode()
        start_response("200 OK", [("Content-Type", "text/plain"),
                                  ("Content-Length", str(len(body)))])
        return [body]
    env_prev = _previous[0] if _previous else None
    report = {
        "fresh_dict": environ is not env_prev,
        "fresh_input": env_prev is None or environ["wsgi.input"] is not env_prev["wsgi.input"],
        "mutated": "test.mutated" in environ,
        "path": environ.get("PATH_INFO"),
        "x_test": environ.get("HTTP_X_TEST"),
        "remote_port": environ.get("REMOTE_PORT"),
        "body": environ["wsgi.input"].read().decode("latin-1"),
        "keys": sorted(k for k in environ if k != "test.mutated"),
    }
    environ["test.mutated"] = 1
    environ["HTTP_X_TEST"] = "changed by the app"
    environ.pop("PATH_INFO", None)
    _previous[:] = [environ]
    body = json.dumps(report).encode()
    start_response("200 OK", [("Content-Type", "application/json"),
                              ("Content-Length", str(len(body)))])
    return [body]
