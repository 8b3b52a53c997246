"""Name resolution for spindle.patch(): inside a request, getaddrinfo and
friends run on a small pool of resolver threads while the request's
greenlet waits on a pipe with wait_readable, so a slow DNS server stalls
only that request. Elsewhere they are the stdlib's functions."""

import concurrent.futures as _futures
import os as _os
import socket as _socket
import threading as _threading

from .. import _spindle

RESOLVER_THREADS = 4
_orig = {name: getattr(_socket, name) for name in
         ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "gethostbyaddr", "getnameinfo")}
_pool = None
_lock = _threading.Lock()


def _reset_after_fork():
    global _pool, _lock
    _pool = None  # the parent's threads do not exist in the child
    _lock = _threading.Lock()


_os.register_at_fork(after_in_child=_reset_after_fork)


def _executor():
    global _pool
    with _lock:
        if _pool is None:
            _pool = _futures.ThreadPoolExecutor(RESOLVER_THREADS,
                                                thread_name_prefix="spindle-resolver")
        return _pool


def run_blocking(fn, *args, **kw):
    """Runs fn on a resolver thread; the calling greenlet waits on the loop.
    Outside a request, calls fn directly."""
    if not _spindle.in_request():
        return fn(*args, **kw)
    r, w = _os.pipe()

    def done(_):
        # The pool thread owns w; the greenlet owns r. Neither end is closed
        # twice, so a recycled fd number is never written to.
        try:
            _os.write(w, b"x")
        except OSError:
            pass
        finally:
            _os.close(w)

    try:
        fut = _executor().submit(fn, *args, **kw)
        fut.add_done_callback(done)
        while not fut.done():
            _spindle.wait_readable(r)
        return fut.result()
    finally:
        _os.close(r)


def _make(name):
    orig = _orig[name]

    def green(*args, **kw):
        # _orig is looked up per call so tests can slow a resolver down.
        return run_blocking(_orig[name], *args, **kw)

    green.__name__ = orig.__name__
    green.__doc__ = orig.__doc__
    green.__wrapped__ = orig
    return green


GREEN = {name: _make(name) for name in _orig}


def _numeric(host):
    try:
        _orig["getaddrinfo"](host, None, 0, 0, 0, _socket.AI_NUMERICHOST)
        return True
    except (OSError, UnicodeError):
        return False


def resolve_for_connect(sock, address):
    """connect() on an INET socket with a host name would resolve inside C,
    blocking the loop: resolve here instead (cooperatively)."""
    if sock.family not in (_socket.AF_INET, _socket.AF_INET6) or not isinstance(address, tuple):
        return address
    host = address[0]
    if not isinstance(host, str) or not host or _numeric(host):
        return address
    infos = GREEN["getaddrinfo"](host, address[1], sock.family, sock.type)
    return infos[0][4] if infos else address


def install():
    for name, fn in GREEN.items():
        setattr(_socket, name, fn)
