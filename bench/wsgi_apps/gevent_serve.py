"""gevent's own WSGI server: python3 gevent_serve.py MODULE:CALLABLE PORT."""
import importlib
import sys

from gevent.pywsgi import WSGIServer

mod, _, attr = sys.argv[1].partition(":")
app = getattr(importlib.import_module(mod), attr or "application")
WSGIServer(("127.0.0.1", int(sys.argv[2])), app, log=None).serve_forever()
