"""Coordination between greenlets of one worker: Event (long polling: many
requests wait, one set() wakes them all) and Channel (a hand-off queue,
unbuffered by default). Waiting parks only the calling greenlet. The app's
other threads (a consumer of a message queue, a ThreadPoolExecutor) may use
them too: the call is handed to the worker's loop, which runs it in a
greenlet; set() returns at once, put()/get()/wait() block that thread."""

import _thread
import collections as _collections
import time as _time

import greenlet as _greenlet

from . import _spindle


def _left(deadline):
    return None if deadline is None else max(0.0, deadline - _time.monotonic())


def _deadline(timeout):
    return None if timeout is None else _time.monotonic() + max(0.0, timeout)


_allocate_lock = _thread.allocate_lock  # a plain lock even after spindle.patch()


def _on_loop():
    return _spindle.on_loop_thread()


def _from_thread(fn, *args):
    """fn(*args) run by the worker's loop in a new greenlet, for a thread
    that is not the loop's: blocks this thread until it returns or raises."""
    done = _allocate_lock()
    done.acquire()
    box = []

    def run():
        try:
            box.append((True, fn(*args)))
        except BaseException as e:  # noqa: BLE001 — handed to the calling thread
            box.append((False, e))
        finally:
            done.release()

    _spindle.start_greenlet_threadsafe(run)
    done.acquire()
    ok, value = box[0]
    if ok:
        return value
    raise value


class Event:
    """A flag greenlets wait for: wait() parks until set() (or the timeout)."""

    def __init__(self):
        self._flag = False
        self._waiters = []

    def is_set(self):
        return self._flag

    def set(self):
        """Sets the flag and wakes every waiter. From another thread it is
        handed to the loop and returns at once."""
        if not _on_loop():
            _spindle.start_greenlet_threadsafe(self.set)
            return
        self._flag = True
        waiters, self._waiters = self._waiters, []
        for g in waiters:
            _spindle.unpark(g)

    def clear(self):
        self._flag = False

    def wait(self, timeout=None):
        """Returns True once the flag is set, False if timeout seconds passed."""
        if self._flag:
            return True
        if not _on_loop():
            return _from_thread(self.wait, timeout)
        me = _greenlet.getcurrent()
        deadline = _deadline(timeout)
        self._waiters.append(me)
        try:
            while not self._flag:
                left = _left(deadline)
                if left == 0.0:
                    return False
                if me not in self._waiters:  # woken by a set() then cleared
                    return True
                _spindle.park(left)
                if me not in self._waiters:
                    return True
            return True
        finally:
            if me in self._waiters:
                self._waiters.remove(me)


class ChannelClosed(Exception):
    """put() on a closed Channel, or get() on a closed and drained one."""


class Channel:
    """A queue between greenlets. capacity=0: put() waits until a get() takes
    the item; capacity N: up to N items wait in the channel. Iterating gets
    items until the channel is closed and drained. put/get raise
    TimeoutError when their timeout passes."""

    def __init__(self, capacity=0):
        if capacity < 0:
            raise ValueError("Channel capacity must be >= 0")
        self.capacity = capacity
        self._items = _collections.deque()
        self._getters = _collections.deque()  # greenlets waiting in get()
        self._putters = _collections.deque()  # [greenlet, item, taken]
        self._handed = {}                     # getter greenlet -> its item
        self.closed = False

    def __len__(self):
        return len(self._items)

    def put(self, item, timeout=None):
        if not _on_loop():
            return _from_thread(self.put, item, timeout)
        if self.closed:
            raise ChannelClosed("put() on a closed Channel")
        while self._getters:
            g = self._getters.popleft()
            if _spindle.unpark(g):
                self._handed[g] = item
                return
        if len(self._items) < self.capacity:
            self._items.append(item)
            return
        me = _greenlet.getcurrent()
        entry = [me, item, False]
        self._putters.append(entry)
        deadline = _deadline(timeout)
        try:
            while not entry[2]:
                if self.closed:
                    raise ChannelClosed("the Channel was closed while put() waited")
                left = _left(deadline)
                if left == 0.0:
                    raise TimeoutError("Channel.put() timed out")
                _spindle.park(left)
        finally:
            if not entry[2] and entry in self._putters:
                self._putters.remove(entry)

    def _take_putter(self):
        entry = self._putters.popleft()
        entry[2] = True
        _spindle.unpark(entry[0])
        return entry[1]

    def get(self, timeout=None):
        if not _on_loop():
            return _from_thread(self.get, timeout)
        if self._items:
            item = self._items.popleft()
            if self._putters:  # a waiting put() fills the freed place
                self._items.append(self._take_putter())
            return item
        if self._putters:
            return self._take_putter()
        me = _greenlet.getcurrent()
        deadline = _deadline(timeout)
        self._getters.append(me)
        try:
            while me not in self._handed:
                if self.closed:
                    raise ChannelClosed("the Channel is closed")
                left = _left(deadline)
                if left == 0.0:
                    raise TimeoutError("Channel.get() timed out")
                _spindle.park(left)
            return self._handed.pop(me)
        finally:
            if me in self._getters:
                self._getters.remove(me)

    def close(self):
        """No more put()s; get() drains what is left, then raises ChannelClosed."""
        if not _on_loop():
            return _from_thread(self.close)
        self.closed = True
        for g in list(self._getters):
            _spindle.unpark(g)
        for entry in list(self._putters):
            _spindle.unpark(entry[0])

    def __iter__(self):
        while True:
            try:
                yield self.get()
            except ChannelClosed:
                return
