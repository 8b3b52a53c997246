"""ASGI failures: an exception before the response starts is a 500 with
the traceback in the error log; after it starts the connection is cut (no
terminating chunk); an app returning without a response is a 500; invalid
messages (unknown type, str headers, CR/LF/NUL in values, a second start,
a body before start, a bad status, a str body) are refused in send() with
one clear log line, and the worker keeps serving."""
import pytest

from lib.asgiutil import connect, recv_until, shared_asgi  # noqa: F401


def test_exception_before_start_is_500_with_traceback(shared_asgi):
    r = shared_asgi.get("/raise_before")
    assert r.status == 500 and r.body == b"500 Internal Server Error\n"
    err = shared_asgi.stderr()
    assert "the ASGI application failed; answered 500 serving 'GET /raise_before'" in err
    assert "ValueError: boom before start" in err and "Traceback" in err


def test_exception_after_start_cuts_the_body(shared_asgi):
    s = connect(shared_asgi.port)
    s.sendall(b"GET /raise_after HTTP/1.1\r\nHost: x\r\n\r\n")
    data = recv_until(s, b"never")  # until the server closes
    s.close()
    assert data.startswith(b"HTTP/1.1 200") and b"partial" in data
    assert not data.endswith(b"0\r\n\r\n"), "the chunked body must not look complete"
    assert "failed after starting its response (the connection is cut)" in shared_asgi.stderr()


def test_exception_after_a_complete_response_keeps_it(shared_asgi):
    # The app's own 500 page went out whole before it raised (Starlette's
    # ServerErrorMiddleware, FastAPI's exception handlers): it stood in
    # uvicorn, spindle replaced it by its own 500.
    r = shared_asgi.get("/raise_after_complete")
    assert r.status == 500 and r.body == b'{"error":"mine"}', r
    assert "raised after its response was complete (the response stands)" in shared_asgi.stderr()


def test_returning_without_response_is_500(shared_asgi):
    r = shared_asgi.get("/no_response")
    assert r.status == 500
    assert "returned without sending a response; answered 500" in shared_asgi.stderr()


def test_returning_with_unfinished_response_cuts(shared_asgi):
    s = connect(shared_asgi.port)
    s.sendall(b"GET /unfinished HTTP/1.1\r\nHost: x\r\n\r\n")
    data = recv_until(s, b"never")
    s.close()
    assert b"partial" in data and not data.endswith(b"0\r\n\r\n")
    assert "returned before finishing its response" in shared_asgi.stderr()


@pytest.mark.parametrize("what,logged", [
    ("type", "unknown ASGI message type 'http.response.nonsense'"),
    ("header_str", "is not a pair of bytes"),
    ("header_crlf", "values have no CR, LF, NUL"),
    ("header_nul", "values have no CR, LF, NUL"),
    ("second_start", "a second http.response.start"),
    ("body_first", "http.response.body before http.response.start"),
    ("status", "needs an int 'status' of 200-599"),
    ("body_str", "'body' must be bytes"),
])
def test_invalid_messages_are_refused(shared_asgi, what, logged):
    r = shared_asgi.get("/bad/" + what)
    # nothing reached the wire before the refusal (a start is sent with the
    # first body bytes), so even after a valid start the answer is a 500
    assert r.status == 500, (what, r.status, r.body)
    assert b"x-injected" not in r.raw_head.lower()
    err = shared_asgi.stderr()
    assert "ASGI send() refused: " in err and logged in err, err[-2000:]
    assert shared_asgi.get("/state").status == 200  # still serving
