"""spindle._asgi: ASGI 3 applications on spindle's loop (the Python half).

Each worker runs one asyncio loop on its main thread. Its selector is
``Selector`` below, whose select() is one turn of spindle's own loop (C:
_asgi_select): asyncio's fds are watches in the worker's epoll, its next
timer is the turn's timeout, and what C coroutines finished in the turn
(new requests, bodies read, writes done) is handed to Python before it
returns. Requests become tasks running ``_run``; lifespan is handled here.
"""

import asyncio
import contextvars
import functools
import inspect
import selectors
import sys

from . import _spindle

_loop = None
_lifespan = None
# The request cycle the running task serves (its subscriptions are that
# request's: spindle.asubscribe); tasks it creates inherit it.
current_cycle = contextvars.ContextVar("spindle_asgi_cycle")


def is_asgi(app):
    """True for an ASGI 3 callable: a coroutine function, or an object whose
    __call__ is one (functools.partial unwrapped)."""
    while isinstance(app, functools.partial):
        app = app.func
    if inspect.iscoroutinefunction(app):
        return True
    if inspect.isfunction(app) or inspect.ismethod(app) or inspect.isclass(app):
        return False
    call = getattr(app, "__call__", None)
    while isinstance(call, functools.partial):
        call = call.func
    return call is not None and inspect.iscoroutinefunction(call)


def interface_of(app, forced):
    """'asgi' or 'wsgi' for the app, as --interface (auto|asgi|wsgi) says."""
    if forced in ("asgi", "wsgi"):
        return forced
    return "asgi" if is_asgi(app) else "wsgi"


class Selector(selectors.BaseSelector):
    """A selector whose waiting is spindle's loop turn (see the module doc)."""

    def __init__(self):
        self._fd_to_key = {}
        self._map = selectors._SelectorMapping(self)

    def _fileobj_lookup(self, fileobj):
        return selectors._fileobj_to_fd(fileobj)

    def register(self, fileobj, events, data=None):
        if not events or events & ~(selectors.EVENT_READ | selectors.EVENT_WRITE):
            raise ValueError("Invalid events: {!r}".format(events))
        fd = self._fileobj_lookup(fileobj)
        if fd in self._fd_to_key:
            raise KeyError("{!r} (FD {}) is already registered".format(fileobj, fd))
        key = selectors.SelectorKey(fileobj, fd, events, data)
        _spindle._asgi_watch(fd, events)
        self._fd_to_key[fd] = key
        return key

    def unregister(self, fileobj):
        fd = self._fileobj_lookup(fileobj)
        try:
            key = self._fd_to_key.pop(fd)
        except KeyError:
            raise KeyError("{!r} is not registered".format(fileobj)) from None
        _spindle._asgi_unwatch(fd)
        return key

    def modify(self, fileobj, events, data=None):
        fd = self._fileobj_lookup(fileobj)
        try:
            key = self._fd_to_key[fd]
        except KeyError:
            raise KeyError("{!r} is not registered".format(fileobj)) from None
        if events != key.events:
            if not events or events & ~(selectors.EVENT_READ | selectors.EVENT_WRITE):
                raise ValueError("Invalid events: {!r}".format(events))
            _spindle._asgi_watch(fd, events)
        key = key._replace(events=events, data=data)
        self._fd_to_key[fd] = key
        return key

    def select(self, timeout=None):
        ready = _spindle._asgi_select(timeout)
        if not ready:
            return ready
        keys = self._fd_to_key
        out = []
        for fd, ev in ready:
            key = keys.get(fd)
            if key is not None and ev & key.events:
                out.append((key, ev & key.events))
        return out

    def close(self):
        for fd in list(self._fd_to_key):
            _spindle._asgi_unwatch(fd)
        self._fd_to_key.clear()

    def get_map(self):
        return self._map


async def _run(app, scope, cycle):
    """One application call; its end (or failure) is told to the cycle."""
    current_cycle.set(cycle)  # the task's own context: no reset needed
    try:
        await app(scope, cycle.receive, cycle.send)
    except asyncio.CancelledError:  # the worker's stop (or the app's own doing)
        cycle._cancelled()
        raise
    except BaseException as exc:  # a 500 or a cut connection, and the log
        if cycle._failed(exc):
            sys.excepthook(type(exc), exc, exc.__traceback__)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
    else:
        cycle._returned()


def _log(level, text):
    # spindle's error log: its line format, its level filter, JSON when asked
    from . import _spindle
    _spindle.log(level, text)


class Lifespan:
    """lifespan 2.0: the startup and shutdown of one worker, with its state."""

    def __init__(self, app, mode):
        self.app, self.mode = app, mode
        self.state = {}
        self.supported = mode != "off"
        self.task = None
        self.to_app = asyncio.Queue()
        self.started = asyncio.Event()
        self.stopped = asyncio.Event()
        self.failed = None  # the app's message
        self.received = False

    async def receive(self):
        self.received = True
        return await self.to_app.get()

    async def send(self, message):
        t = message.get("type") if isinstance(message, dict) else None
        if t == "lifespan.startup.complete":
            self.started.set()
        elif t == "lifespan.startup.failed":
            self.failed = message.get("message", "") or "lifespan.startup.failed"
            self.started.set()
        elif t == "lifespan.shutdown.complete":
            self.stopped.set()
        elif t == "lifespan.shutdown.failed":
            _log("error", "ASGI lifespan shutdown failed: %s" % message.get("message", ""))
            self.stopped.set()
        else:
            raise RuntimeError("unknown ASGI lifespan message %r" % (message,))

    async def _main(self):
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"},
                 "state": self.state}
        try:
            await self.app(scope, self.receive, self.send)
        except BaseException as exc:
            if self.mode == "auto" and not self.received:
                _log("info", "the ASGI application does not support lifespan (%s: %s); "
                     "serving without it" % (type(exc).__name__, exc))
                self.supported = False
            else:
                self.failed = self.failed or "%s: %s" % (type(exc).__name__, exc)
                sys.excepthook(type(exc), exc, exc.__traceback__)
        finally:
            self.started.set()
            self.stopped.set()

    async def startup(self):
        if not self.supported:
            return True
        self.task = asyncio.get_running_loop().create_task(self._main())
        await self.to_app.put({"type": "lifespan.startup"})
        await self.started.wait()
        if self.failed is not None:
            _log("critical", "ASGI lifespan startup failed: %s" % self.failed)
            return False
        if self.task.done() and not self.received:
            # It returned without reading lifespan.startup: no lifespan, no state.
            _log("info", "the ASGI application returned from the lifespan scope at once; "
                 "serving without lifespan")
            self.supported = False
        return True

    async def shutdown(self):
        if not self.supported or self.task is None or self.task.done():
            return
        await self.to_app.put({"type": "lifespan.shutdown"})
        await self.stopped.wait()


class Loop(_spindle._CallSoon, asyncio.SelectorEventLoop):
    """asyncio's selector loop with call_soon in C (asgi_soon.c); the same
    Handles, the same order, asyncio's own path in debug mode."""


def worker_start(app, lifespan):
    """In each worker, after the import: the loop and the lifespan startup.
    Returns (loop, _run, ok)."""
    global _loop, _lifespan
    _loop = Loop(Selector())
    asyncio.set_event_loop(_loop)
    _lifespan = Lifespan(app, lifespan)
    ok = _loop.run_until_complete(_lifespan.startup())
    return _loop, _run, ok


async def _serve():
    done = _loop.create_future()
    state = _lifespan.state if _lifespan.supported else None
    _spindle._asgi_serving(state, functools.partial(done.set_result, None))
    await done
    await _lifespan.shutdown()
    # What the app left running (background work, calls whose client is
    # gone) is cancelled, with a second to clean up, rather than dropped.
    me = asyncio.current_task()
    rest = [t for t in asyncio.all_tasks() if t is not me]
    for t in rest:
        t.cancel()
    if rest:
        await asyncio.wait(rest, timeout=1.0)


def worker_serve():
    """Serves until the server is done (stopped, connections closed), then
    runs the lifespan shutdown."""
    try:
        _loop.run_until_complete(_serve())
    finally:
        try:
            _loop.run_until_complete(_loop.shutdown_asyncgens())
        except Exception:
            pass
