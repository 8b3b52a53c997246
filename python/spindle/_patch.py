"""spindle.patch(): cooperative socket and time.sleep inside requests.

Inside a request (a greenlet spindle runs), a blocking socket call waits
with spindle.wait_readable / wait_writable, so the worker serves others
meanwhile; time.sleep becomes spindle.sleep. Outside a request (start-up
code, other threads) everything behaves as the standard library does."""

import socket as _socket
import time as _time

from . import _spindle

_patched = False


class CooperativeSocket(_socket.socket):
    """A socket whose blocking calls yield to other requests. The timeout
    the application set (settimeout, create_connection's timeout) still
    holds; underneath, the fd is non-blocking while in a request."""

    __slots__ = ()

    def _wait(self, write):
        timeout = super().gettimeout()
        fd = self.fileno()
        if write:
            ready = _spindle.wait_writable(fd, timeout)
        else:
            ready = _spindle.wait_readable(fd, timeout)
        if not ready:
            raise _socket.timeout("timed out")

    def _call(self, write, fn, *args):
        if not _spindle.in_request() or super().gettimeout() == 0.0:
            return fn(*args)
        # Try without blocking first; wait only when the kernel says so.
        saved = super().gettimeout()
        super().settimeout(0.0)
        try:
            while True:
                try:
                    return fn(*args)
                except (BlockingIOError, InterruptedError):
                    pass
                super().settimeout(saved)
                try:
                    self._wait(write)
                finally:
                    super().settimeout(0.0)
        finally:
            super().settimeout(saved)

    def recv(self, *a):
        return self._call(False, super().recv, *a)

    def recv_into(self, *a):
        return self._call(False, super().recv_into, *a)

    def recvfrom(self, *a):
        return self._call(False, super().recvfrom, *a)

    def recvfrom_into(self, *a):
        return self._call(False, super().recvfrom_into, *a)

    def send(self, *a):
        return self._call(True, super().send, *a)

    def sendto(self, *a):
        return self._call(True, super().sendto, *a)

    def sendall(self, data, flags=0):
        view = memoryview(data).cast("B")
        while view:
            n = self.send(view, flags)
            view = view[n:]

    def accept(self):
        if not _spindle.in_request():
            return super().accept()
        while True:
            try:
                saved = super().gettimeout()
                super().settimeout(0.0)
                try:
                    fd, addr = self._accept()
                finally:
                    super().settimeout(saved)
                break
            except (BlockingIOError, InterruptedError):
                self._wait(False)
        sock = CooperativeSocket(self.family, self.type, self.proto, fileno=fd)
        if _socket.getdefaulttimeout() is None and self.gettimeout():
            sock.setblocking(True)
        return sock, addr

    def connect(self, address):
        if not _spindle.in_request() or super().gettimeout() == 0.0:
            return super().connect(address)
        saved = super().gettimeout()
        super().settimeout(0.0)
        try:
            err = self.connect_ex(address)
            if err in (0,):
                return None
            import errno
            if err not in (errno.EINPROGRESS, errno.EAGAIN, errno.EALREADY, errno.EWOULDBLOCK):
                raise OSError(err, _socket.errno.errorcode.get(err, "connect failed")
                              if hasattr(_socket, "errno") else "connect failed")
            super().settimeout(saved)
            self._wait(True)
            super().settimeout(0.0)
            err = self.getsockopt(_socket.SOL_SOCKET, _socket.SO_ERROR)
            if err:
                import os
                raise OSError(err, os.strerror(err))
        finally:
            super().settimeout(saved)


def _cooperative_sleep(seconds):
    if _spindle.in_request():
        return _spindle.sleep(seconds)
    return _time._spindle_orig_sleep(seconds)


def patch_all():
    global _patched
    if _patched:
        return
    _patched = True
    _time._spindle_orig_sleep = _time.sleep
    _time.sleep = _cooperative_sleep
    _socket.socket = CooperativeSocket
    _socket.SocketType = CooperativeSocket
