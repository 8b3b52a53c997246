"""The standard library's wsgiref server (single-threaded, HTTP/1.0, closes
every connection): python3 wsgiref_serve.py MODULE:CALLABLE PORT."""
import importlib
import sys
from wsgiref.simple_server import WSGIRequestHandler, make_server


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass


mod, _, attr = sys.argv[1].partition(":")
app = getattr(importlib.import_module(mod), attr or "application")
server = make_server("127.0.0.1", int(sys.argv[2]), app, handler_class=QuietHandler)
server.request_queue_size = 1024
server.serve_forever()
