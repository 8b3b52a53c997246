"""For test_wsgi_environ_cache: reports what its environ holds, then changes
it (a key added, one replaced, one removed, the input read), so the test can
see that a repeated head's environ starts clean each time."""
import json

_previous = []  # the last environ and input stay alive: their ids cannot be reused


def application(environ, start_response):
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
