"""Checks the types of an http scope inside the app (the JSON view of
asgi_spec hides them); answers ok or what is wrong."""


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        return  # not supported (auto): the info line, then serving
    bad = []
    for k in ("raw_path", "query_string"):
        if not isinstance(scope[k], bytes):
            bad.append(k)
    for k in ("path", "root_path", "method", "scheme", "http_version"):
        if not isinstance(scope[k], str):
            bad.append(k)
    if not isinstance(scope["headers"], list) or not all(
            isinstance(h, tuple) and len(h) == 2 and all(isinstance(x, bytes) for x in h)
            for h in scope["headers"]):
        bad.append("headers")
    if any(n != n.lower() for n, _ in scope["headers"]):
        bad.append("lower-case")
    if not (isinstance(scope["client"], tuple) and isinstance(scope["server"], tuple)):
        bad.append("client/server")
    if "state" in scope:
        bad.append("state without lifespan")
    m = await receive()
    if m != {"type": "http.request", "body": b"", "more_body": False}:
        bad.append(repr(m))
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": (" ".join(bad) or "ok").encode()})
