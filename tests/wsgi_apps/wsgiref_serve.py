"""The reference: wsgiref.simple_server serving MODULE:CALLABLE on
127.0.0.1:PORT (python3 wsgiref_serve.py MODULE:CALLABLE PORT)."""
import importlib
import sys
from wsgiref.simple_server import WSGIRequestHandler, make_server


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass


def main():
    spec, port = sys.argv[1], int(sys.argv[2])
    module, _, attr = spec.partition(":")
    obj = importlib.import_module(module)
    for part in (attr or "application").split("."):
        obj = getattr(obj, part)
    make_server("127.0.0.1", port, obj, handler_class=QuietHandler).serve_forever()


if __name__ == "__main__":
    main()
