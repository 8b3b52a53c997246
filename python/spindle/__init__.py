"""spindle: a coroutine HTTP/1.1 server in C, serving WSGI and ASGI applications.

    import spindle
    spindle.run(app, bind="127.0.0.1:8080", workers=2)

or from a shell: ``python3 -m spindle module:app --bind 127.0.0.1:8080``.
Each request runs in its own greenlet on the worker's main stack; waiting
(for the request body, a full socket buffer, ``spindle.sleep``) yields to
the other requests. ``spindle.patch()`` makes socket, ssl, name resolution,
select/poll/selectors, ``time.sleep``, psycopg2 and threading locks
cooperative for pure-Python clients. ``spindle.session(environ)`` is the
visitor's session (a str -> str mapping; needs ``--sessions STORE``).
``spindle.publish`` / ``spindle.subscribe`` (ASGI: ``apublish`` /
``asubscribe``) are the bus's topics (needs ``--bus SPEC``).
"""

try:
    # The extension imports greenlet's C API (a capsule) as it loads; without
    # greenlet that fails as 'PyCapsule_Import could not import module
    # "greenlet"', which does not say what to do.
    import greenlet as _greenlet  # noqa: F401
except ImportError as _e:
    raise ImportError("spindle needs greenlet: pip install greenlet", name="greenlet") from _e

from . import _spindle
from ._spindle import early_hints, in_request, sleep, wait_readable, wait_writable
from ._spindle import WebSocket, WebSocketError, websocket
from ._filewrapper import FileWrapper
from ._sched import every, on_worker_start, on_worker_stop, run_blocking, spawn
from ._session import Session, session
from ._sync import Channel, ChannelClosed, Event
from ._bus import (AsyncSubscription, BusError, Message, Subscription, apublish, asubscribe,
                   publish, subscribe)

__all__ = ["run", "serve_argv", "sleep", "wait_readable", "wait_writable", "patch",
           "in_request", "FileWrapper", "session", "Session", "websocket", "WebSocket",
           "WebSocketError", "spawn", "every", "Event", "Channel", "ChannelClosed",
           "run_blocking", "on_worker_start", "on_worker_stop", "publish", "subscribe",
           "apublish", "asubscribe", "Subscription", "AsyncSubscription", "Message",
           "BusError", "early_hints"]

API_VERSION = _spindle.API_VERSION


def _flags(kw):
    """Turns keyword arguments into the command's flags: max_body_size=1
    becomes --max-body-size=1 (the = form: a value may begin with -), True
    becomes a bare flag, a list or tuple repeats the flag
    (static_map=["/static=./public", ...])."""
    argv = []
    for key, value in kw.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, (list, tuple)):
            argv += ["%s=%s" % (flag, v) for v in value]
        elif value is True:
            argv.append(flag)
        elif value is False or value is None:
            continue
        else:
            argv.append("%s=%s" % (flag, value))
    return argv


def run(app, bind="127.0.0.1:8080", workers=1, root_path="", max_concurrent_app_calls=0,
        **flags):
    """Serves the WSGI or ASGI callable ``app`` until a stop signal (TERM,
    INT, QUIT), as ``uvicorn.run`` does. An ASGI 3 app (a coroutine
    function, or an object whose __call__ is one) is detected;
    ``interface="asgi"`` or ``"wsgi"`` forces it, ``lifespan="auto"|"on"|"off"``
    governs its lifespan events.

    ``app`` is the callable itself — imported already, so workers share it
    from the fork (like gunicorn's --preload) — or a ``"module:attr"``
    string, imported in each worker as the command does (once in the master
    with ``preload=True``). ``bind`` is one address or a list; other keyword
    arguments are the flags of ``spindle --help`` with ``_`` for ``-``
    (``keepalive_timeout=5``, ``max_body_size="10m"``, ``static_map=[...]``
    repeats one). Returns the exit status."""
    # uvicorn's host=/port= (taken as aliases of one --bind) replace the
    # default address instead of adding a second listener beside it.
    if ("host" in flags or "port" in flags) and bind == "127.0.0.1:8080":
        binds = []
    else:
        binds = [bind] if isinstance(bind, str) else list(bind)
    argv = []
    for b in binds:
        argv.append("--bind=%s" % b)
    argv += ["--workers", str(workers)] + _flags(flags)
    loader = None
    if isinstance(app, str):
        # The command's own import (sys.path gets the working directory).
        from .__main__ import load
        spec = app

        def loader():
            return load(spec)
        loader.spec = spec  # named in the message when preload cannot import it
        app = None
    return _spindle.serve(argv, loader, app=app, root_path=root_path,
                          max_concurrent=max_concurrent_app_calls, file_wrapper=FileWrapper,
                          prog="spindle.run")


def serve_argv(argv, loader, app=None, root_path="", max_concurrent_app_calls=0,
               prog="python3 -m spindle MODULE:CALLABLE"):
    """The command line's entry: ``argv`` holds every flag (parsed on the C
    side from the one flag table, --preload, --root-path and
    --max-concurrent-app-calls included); ``loader`` imports the app in each
    worker, or once in the master with --preload, unless ``app`` is given. A
    non-empty ``root_path`` or a positive ``max_concurrent_app_calls`` wins
    over the flag."""
    return _spindle.serve(list(argv), loader, app=app, root_path=root_path,
                          max_concurrent=max_concurrent_app_calls, file_wrapper=FileWrapper,
                          prog=prog)


def patch():
    """Makes blocking calls cooperative inside requests — socket, ssl,
    getaddrinfo and friends (on resolver threads), select / poll /
    selectors, ``time.sleep``, psycopg2 (its wait callback) and threading
    locks made afterwards — so clients (urllib, redis-py, psycopg2,
    SQLAlchemy, PyMySQL) yield to other requests instead of blocking the
    worker. Outside a request, and in the app's other threads, they are the
    standard library's. ``threading.local`` (and ``_thread._local``) made
    afterwards keeps one attribute dict per greenlet, so concurrent requests
    do not see each other's values."""
    from ._patch import patch_all
    patch_all()
