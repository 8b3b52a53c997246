"""eventlet's WSGI server: python3 eventlet_serve.py MODULE:CALLABLE PORT
[WORKERS] (WORKERS > 1: pre-forked processes sharing the socket)."""
import eventlet

eventlet.monkey_patch()
import importlib  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402

from eventlet import wsgi  # noqa: E402

import prefork  # noqa: E402

mod, _, attr = sys.argv[1].partition(":")
sock = eventlet.listen(("127.0.0.1", int(sys.argv[2])), backlog=1024)
# Inherited by every accepted socket (Linux): no Nagle delay on answers
# written in several pieces (see gevent_serve.py).
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
prefork.fork(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
app = getattr(importlib.import_module(mod), attr or "application")
wsgi.server(sock, app, log_output=False, max_size=20000)
