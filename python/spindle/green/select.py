"""Cooperative select.select, select.poll and selectors.DefaultSelector for
spindle.patch(). Inside a request: ask the real call with a zero timeout;
if nothing is ready, park on all the fds at once (_spindle.wait_fds) until
one is or the timeout passes, and ask again. Elsewhere: the stdlib's."""

import select as _select
import selectors as _selectors
import time as _time

from .. import _spindle

_orig_select = _select.select
_orig_poll = getattr(_select, "poll", None)
_orig_selector = _selectors.DefaultSelector
_READ = getattr(_select, "POLLIN", 1) | getattr(_select, "POLLPRI", 2)
_WRITE = getattr(_select, "POLLOUT", 4)


def _wait_loop(probe, rfds, wfds, timeout):
    """probe() until it returns something, parking between tries; timeout
    None waits for ever. Returns the last probe's answer."""
    deadline = None if timeout is None else _time.monotonic() + max(timeout, 0)
    while True:
        got = probe()
        if got:
            return got
        left = None if deadline is None else deadline - _time.monotonic()
        if left is not None and left <= 0:
            return got
        readable, writable = _spindle.wait_fds(rfds, wfds, left)
        if not readable and not writable:
            return probe()  # timed out: one last look


def select(rlist, wlist, xlist, timeout=None):
    if not _spindle.in_request() or timeout == 0:
        return _orig_select(rlist, wlist, xlist, timeout)
    rlist, wlist, xlist = list(rlist), list(wlist), list(xlist)

    def probe():
        r = _orig_select(rlist, wlist, xlist, 0)
        return r if any(r) else None

    got = _wait_loop(probe, rlist + xlist, wlist, timeout)
    return got or ([], [], [])


class GreenPoll:
    """select.poll() whose poll() waits on the loop inside a request."""

    def __init__(self):
        self._p = _orig_poll()
        self._masks = {}

    def register(self, fd, eventmask=_READ | _WRITE):
        self._p.register(fd, eventmask)
        self._masks[_fd(fd)] = eventmask

    def modify(self, fd, eventmask):
        self._p.modify(fd, eventmask)
        self._masks[_fd(fd)] = eventmask

    def unregister(self, fd):
        self._p.unregister(fd)
        del self._masks[_fd(fd)]

    def poll(self, timeout=None):
        if timeout is not None and timeout < 0:
            timeout = None
        if not _spindle.in_request() or timeout == 0:
            return self._p.poll(timeout)
        rfds = [fd for fd, m in self._masks.items() if m & _READ or not m & _WRITE]
        wfds = [fd for fd, m in self._masks.items() if m & _WRITE]
        got = _wait_loop(lambda: self._p.poll(0), rfds, wfds,
                         None if timeout is None else timeout / 1000.0)
        return got or []


def _fd(f):
    return f if isinstance(f, int) else f.fileno()


class GreenSelector(_orig_selector):
    """selectors.DefaultSelector whose select() waits on the loop inside a
    request."""

    def select(self, timeout=None):
        if not _spindle.in_request() or (timeout is not None and timeout <= 0):
            return super().select(timeout)
        keys = list(self.get_map().values())
        rfds = [k.fd for k in keys if k.events & _selectors.EVENT_READ]
        wfds = [k.fd for k in keys if k.events & _selectors.EVENT_WRITE]
        got = _wait_loop(lambda: super(GreenSelector, self).select(0), rfds, wfds, timeout)
        return got or []


def install():
    _select.select = select
    if _orig_poll is not None:
        _select.poll = GreenPoll
    _selectors.DefaultSelector = GreenSelector
