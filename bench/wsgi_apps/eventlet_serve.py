"""eventlet's WSGI server: python3 eventlet_serve.py MODULE:CALLABLE PORT."""
import eventlet

eventlet.monkey_patch()
import importlib  # noqa: E402
import sys  # noqa: E402

from eventlet import wsgi  # noqa: E402

mod, _, attr = sys.argv[1].partition(":")
app = getattr(importlib.import_module(mod), attr or "application")
wsgi.server(eventlet.listen(("127.0.0.1", int(sys.argv[2]))), app, log_output=False,
            max_size=10000)
