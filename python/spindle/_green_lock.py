"""Greenlet-aware threading locks for spindle.patch(). Requests share the
worker's thread, so a plain Lock held by a parked request blocks the next
request that wants it — the whole worker, for ever (SQLAlchemy's first
connect takes one). Inside a request a contended acquire polls with
spindle.sleep (1 ms, growing to 20 ms); elsewhere it is the real lock's."""

import _thread
import threading as _threading
import time as _time

import greenlet as _greenlet

from . import _spindle

_real_allocate = _thread.allocate_lock


class GreenLock:
    """threading.Lock whose contended acquire yields to other requests."""

    __slots__ = ("_lock", "__weakref__")

    def __init__(self):
        self._lock = _real_allocate()

    def acquire(self, blocking=True, timeout=-1):
        if not blocking or not _spindle.in_request():
            return self._lock.acquire(blocking, timeout)
        if self._lock.acquire(False):
            return True
        deadline = None if timeout is None or timeout < 0 else _time.monotonic() + timeout
        pause = 0.001
        while True:
            if deadline is not None and _time.monotonic() >= deadline:
                return self._lock.acquire(False)
            _spindle.sleep(pause)
            if self._lock.acquire(False):
                return True
            pause = min(pause * 2, 0.02)

    def release(self):
        self._lock.release()

    def locked(self):
        return self._lock.locked()

    def _at_fork_reinit(self):
        self._lock = _real_allocate()

    __enter__ = acquire

    def __exit__(self, *a):
        self._lock.release()


def _me():
    # Requests share a thread: the owner is the greenlet (in its thread).
    return (_thread.get_ident(), _greenlet.getcurrent())


class GreenRLock:
    """threading.RLock owned by a greenlet, not by the shared thread."""

    def __init__(self):
        self._block = GreenLock()
        self._owner = None
        self._count = 0

    def acquire(self, blocking=True, timeout=-1):
        me = _me()
        if self._owner == me:
            self._count += 1
            return True
        if not self._block.acquire(blocking, timeout):
            return False
        self._owner, self._count = me, 1
        return True

    __enter__ = acquire

    def release(self):
        if self._owner != _me():
            raise RuntimeError("cannot release un-acquired lock")
        self._count -= 1
        if not self._count:
            self._owner = None
            self._block.release()

    def __exit__(self, *a):
        self.release()

    def locked(self):
        return self._block.locked()

    # What threading.Condition uses when its lock has them.
    def _is_owned(self):
        return self._owner == _me()

    def _release_save(self):
        if self._owner != _me():
            raise RuntimeError("cannot release un-acquired lock")
        state = (self._count, self._owner)
        self._owner, self._count = None, 0
        self._block.release()
        return state

    def _acquire_restore(self, state):
        self._block.acquire()
        self._count, self._owner = state

    def _at_fork_reinit(self):
        self._block._at_fork_reinit()
        self._owner, self._count = None, 0


def install():
    """Locks made from now on (threading.Lock, RLock, and the waiters of
    Condition, Event, Semaphore, queue.Queue) are greenlet-aware."""
    _threading.Lock = GreenLock
    _threading._allocate_lock = GreenLock
    _threading.RLock = GreenRLock
