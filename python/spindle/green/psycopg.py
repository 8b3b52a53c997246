"""psycopg2 under spindle.patch(): the psycogreen wait callback. With it
psycopg2 runs every connection asynchronously and calls us to wait; inside
a request we wait on the loop, elsewhere (start-up code, other threads) in
a plain blocking select, so those behave as before."""

import select as _select

from .. import _spindle
from . import select as _green_select


def wait_callback(conn, timeout=None):
    import psycopg2.extensions as ext
    while True:
        state = conn.poll()
        if state == ext.POLL_OK:
            return
        fd = conn.fileno()
        if state == ext.POLL_READ:
            write = False
        elif state == ext.POLL_WRITE:
            write = True
        else:
            raise ext.OperationalError("psycopg2: bad poll state %r" % state)
        if _spindle.in_request():
            (_spindle.wait_writable if write else _spindle.wait_readable)(fd)
        else:
            _block(fd, write)


def _block(fd, write):
    # poll, not select: no FD_SETSIZE limit on the fd number.
    p = _green_select._orig_poll()
    p.register(fd, _select.POLLOUT if write else _select.POLLIN)
    p.poll()


def install():
    """Installs the callback when psycopg2 is importable; True if it did."""
    try:
        import psycopg2.extensions as ext
    except ImportError:
        return False
    ext.set_wait_callback(wait_callback)
    return True

