"""spindle.patch(): blocking calls made cooperative inside requests.

Inside a request (or a greenlet it spawned) on the worker's loop thread, a
call that would block waits on the loop, so the worker serves other
requests meanwhile: socket (green.socket), ssl (green.ssl), name
resolution on resolver threads (green.dns), select / poll / selectors
(green.select), time.sleep, psycopg2 through its wait callback
(green.psycopg), threading locks made after patch() (green.lock) and
threading.local, per greenlet (green.local). Outside one (start-up code,
the app's other threads) every patched call is the stdlib's, and a local
keeps one dict per thread there (each runs on a main greenlet of its own)."""

import socket as _socket
import time as _time

from . import _spindle

_patched = False
_orig_sleep = _time.sleep


def _cooperative_sleep(seconds):
    if _spindle.in_request():
        return _spindle.sleep(seconds)
    return _orig_sleep(seconds)


def patch_all():
    global _patched
    if _patched:
        return
    _patched = True
    from .green import dns as _green_dns
    from .green import local as _green_local
    from .green import lock as _green_lock
    from .green import psycopg as _green_psycopg
    from .green import select as _green_select
    from .green import socket as _green_socket
    from .green import ssl as _green_ssl

    _time._spindle_orig_sleep = _orig_sleep
    _time.sleep = _cooperative_sleep
    _socket.socket = _green_socket.CooperativeSocket
    _socket.SocketType = _green_socket.CooperativeSocket
    _green_dns.install()
    _green_ssl.install()
    _green_select.install()
    _green_psycopg.install()
    _green_lock.install()
    _green_local.install()
