"""Counts its calls; /count (not counted) reports them."""
CALLS = [0]


def application(environ, start_response):
    if environ["PATH_INFO"] == "/count":
        body = str(CALLS[0]).encode()
    else:
        CALLS[0] += 1
        body = b"called"
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [body]
