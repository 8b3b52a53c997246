"""spindle.patch(): blocking calls made cooperative inside requests.

Inside a request (or a greenlet it spawned) on the worker's loop thread, a
call that would block waits on the loop, so the worker serves other
requests meanwhile: socket (_green_socket), ssl (_green_ssl), name
resolution on resolver threads (_green_dns), select / poll / selectors
(_green_select), time.sleep, psycopg2 through its wait callback
(_green_psycopg), threading locks made after patch() (_green_lock) and
threading.local, per greenlet (_green_local). Outside one (start-up code,
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
    from . import (_green_dns, _green_local, _green_lock, _green_psycopg, _green_select, _green_socket,
                   _green_ssl)

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
