"""WSGI app for tests/integration/test_wsgi_hints.py: environ["spindle.early_hints"]
before start_response, after it (still before the head), refused links, and
too late (after the first body bytes); the body says what each call gave."""
import json


def app(environ, start_response):
    hints = environ["spindle.early_hints"]
    got = {"first": hints(["</style.css>; rel=preload; as=style", b"</app.js>; rel=preload"])}
    for name, bad in (("crlf", ["</x>\r\nSet-Cookie: evil=1"]), ("many", ["</a>"] * 17),
                      ("type", [42])):
        try:
            hints(bad)
            got[name] = "accepted"
        except (ValueError, TypeError) as e:
            got[name] = type(e).__name__ + ": " + str(e)
    write = start_response("200 OK", [("Content-Type", "application/json")])
    got["after_start"] = hints(["</late-but-ok.css>"])
    write(b"[")
    try:
        hints(["</too-late.css>"])
        got["late"] = "accepted"
    except RuntimeError as e:
        got["late"] = str(e)
    return [json.dumps(got).encode(), b"]"]
