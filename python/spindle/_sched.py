"""Scheduling inside a worker: spawn (a function in its own greenlet, outside
any request), every (a periodic call that never overlaps itself), the worker
hooks (on_worker_start / on_worker_stop) and run_blocking (a blocking call on
the worker's thread pool while only the calling greenlet waits)."""

import sys as _sys
import time as _time
import traceback as _traceback

import greenlet as _greenlet

from . import _spindle
from .green import dns as _green_dns

_started = False  # this process's worker loop exists (set by _worker_start)
_pending = []     # spawns made before it did: at import time, before the fork
_start_hooks = []
_stop_hooks = []


def _log_exception(what, fn):
    name = getattr(fn, "__qualname__", None) or repr(fn)
    from . import _spindle
    _spindle.log("error", "exception in %s %s (the worker carries on):\n%s"
                 % (what, name, _traceback.format_exc().rstrip("\n")))


def _guarded(what, fn, args, kw):
    def run():
        try:
            fn(*args, **kw)
        except _greenlet.GreenletExit:
            pass
        except BaseException:
            _log_exception(what, fn)
    return run


def spawn(fn, *args, **kw):
    """Runs fn(*args, **kw) in its own greenlet on the worker's loop, outside
    any request; it may sleep and wait cooperatively (spindle.sleep, Event,
    Channel, run_blocking, patched sockets). It starts on the loop's next
    turn (called at import time or in on_worker_start: once the worker
    serves, in every worker). An exception is logged with its traceback."""
    run = _guarded("spawned function", fn, args, kw)
    if _started:
        _spindle.start_greenlet(run)
    else:
        _pending.append(run)


class Periodic:
    """The handle every() returns: cancel() stops the calls to come."""

    def __init__(self, seconds, fn, args, kw):
        self.seconds, self.fn, self.args, self.kw = seconds, fn, args, kw
        self.cancelled = False
        self.calls = 0
        self._g = None

    def cancel(self):
        self.cancelled = True
        if self._g is not None:
            _spindle.unpark(self._g)

    def _run(self):
        self._g = _greenlet.getcurrent()
        due = _time.monotonic() + self.seconds
        while not self.cancelled:
            left = due - _time.monotonic()
            if left > 0:
                _spindle.park(left)  # cancel() unparks at once
                continue
            try:
                self.fn(*self.args, **self.kw)
            except _greenlet.GreenletExit:
                return
            except BaseException:
                _log_exception("periodic function", self.fn)
            self.calls += 1
            # Fixed rate; a call that overran skips the ticks it missed.
            due += self.seconds
            now = _time.monotonic()
            if due <= now:
                due = now + self.seconds
        self._g = None


def every(seconds, fn, *args, **kw):
    """Calls fn(*args, **kw) every `seconds` in one greenlet of its own (the
    first call a period from now): calls never overlap, a slow one delays
    the next. Returns a handle whose cancel() stops it. An exception is
    logged with its traceback and the calls go on."""
    if not seconds > 0:
        raise ValueError("spindle.every: the period must be a positive number of seconds")
    p = Periodic(float(seconds), fn, args, kw)
    spawn(p._run)
    return p


def on_worker_start(fn):
    """Decorator: fn() runs in each worker after the fork, once the
    application is imported, before it serves (open per-worker clients, start
    every() jobs there). An exception is logged; the worker serves on."""
    _start_hooks.append(fn)
    return fn


def on_worker_stop(fn):
    """Decorator: fn() runs once in each worker as its graceful stop begins
    (no new connections; in-flight requests still run, so it may release
    long polls with Event.set() or close a Channel before --graceful-timeout
    cuts them)."""
    _stop_hooks.append(fn)
    return fn


def run_blocking(fn, *args, **kw):
    """Calls fn(*args, **kw) on the worker's thread pool (--blocking-threads,
    the pool name resolution under spindle.patch() uses) while the calling
    greenlet waits cooperatively; returns its value or raises its exception.
    Outside the loop (start-up code, other threads) it calls fn directly."""
    return _green_dns.run_blocking(fn, *args, **kw)


def _worker_start(blocking_threads):
    global _started
    if blocking_threads > 0:
        _green_dns.RESOLVER_THREADS = blocking_threads
    _started = True
    for run in _pending:
        _spindle.start_greenlet(run)
    del _pending[:]
    for fn in _start_hooks:
        try:
            fn()
        except BaseException:
            _log_exception("on_worker_start hook", fn)


def _worker_stop():
    for fn in _stop_hooks:
        try:
            fn()
        except BaseException:
            _log_exception("on_worker_stop hook", fn)
