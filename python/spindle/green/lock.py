"""Greenlet-aware threading locks for spindle.patch(). Requests share the
worker's thread, so a plain Lock held by a parked request blocks the next
request that wants it — the whole worker, for ever (SQLAlchemy's first
connect takes one). Inside a request a contended acquire parks the greenlet
until a release on the loop's thread unparks it (or 5 ms pass: a release
by another thread); elsewhere it is the real lock's."""

import _thread
import collections as _collections
import threading as _threading
import time as _time

import greenlet as _greenlet

from .. import _spindle

_real_allocate = _thread.allocate_lock
CROSS_THREAD_POLL = 0.005  # seconds: the longest a release by another thread goes unseen


class GreenLock:
    """threading.Lock whose contended acquire yields to other requests."""

    __slots__ = ("_lock", "_waiters", "__weakref__")

    def __init__(self):
        self._lock = _real_allocate()
        self._waiters = _collections.deque()

    def acquire(self, blocking=True, timeout=-1):
        if not blocking or not _spindle.in_request():
            return self._lock.acquire(blocking, timeout)
        if self._lock.acquire(False):
            return True
        deadline = None if timeout is None or timeout < 0 else _time.monotonic() + timeout
        me = _greenlet.getcurrent()
        self._waiters.append(me)
        try:
            while True:
                left = CROSS_THREAD_POLL
                if deadline is not None:
                    left = min(left, deadline - _time.monotonic())
                    if left <= 0:
                        return self._lock.acquire(False)
                # A release on this thread unparks us; one by another
                # thread cannot, so the park is bounded.
                _spindle.park(left)
                if self._lock.acquire(False):
                    return True
        finally:
            self._waiters.remove(me)

    def release(self):
        self._lock.release()
        if self._waiters:
            _spindle.unpark(self._waiters[0])

    def locked(self):
        return self._lock.locked()

    def _at_fork_reinit(self):
        self._lock = _real_allocate()
        self._waiters = _collections.deque()

    __enter__ = acquire

    def __exit__(self, *a):
        self.release()


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
