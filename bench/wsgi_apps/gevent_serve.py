"""gevent's own WSGI server: python3 gevent_serve.py MODULE:CALLABLE PORT
[WORKERS] (WORKERS > 1: pre-forked processes sharing the socket)."""
import importlib
import sys

from gevent import monkey

monkey.patch_all()
from gevent.pywsgi import WSGIServer  # noqa: E402
import socket  # noqa: E402

import prefork  # noqa: E402

mod, _, attr = sys.argv[1].partition(":")
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
# Inherited by every accepted socket (Linux): answers are not held back by
# Nagle while the client delays its ACK (~40 ms a request otherwise), as
# gunicorn, nginx and node do for theirs.
listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
listener.bind(("127.0.0.1", int(sys.argv[2])))
listener.listen(1024)
prefork.fork(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
app = getattr(importlib.import_module(mod), attr or "application")
WSGIServer(listener, app, log=None).serve_forever()
