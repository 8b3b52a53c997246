"""Cooperative socket.socket for spindle.patch(). Inside a request on the
worker's loop thread, a call that would block sets the fd non-blocking,
tries, and on EAGAIN waits with spindle.wait_readable / wait_writable; the
timeout the application set still holds. Anywhere else: the stdlib's."""

import errno as _errno
import os as _os
import socket as _socket

from .. import _spindle
from .dns import resolve_for_connect

_orig_socket = _socket.socket
_CONNECTING = (_errno.EINPROGRESS, _errno.EAGAIN, _errno.EALREADY, _errno.EWOULDBLOCK)


def cooperative(sock):
    """True when sock's blocking calls should wait on the loop."""
    return _spindle.in_request() and _orig_socket.gettimeout(sock) != 0.0


def wait(sock, write, timeout):
    fd = sock.fileno()
    ready = (_spindle.wait_writable if write else _spindle.wait_readable)(fd, timeout)
    if not ready:
        raise _socket.timeout("timed out")


def call(sock, write, fn, *args):
    """Runs fn(*args) with sock non-blocking, waiting on the loop while it
    raises BlockingIOError."""
    saved = _orig_socket.gettimeout(sock)
    _orig_socket.settimeout(sock, 0.0)
    try:
        while True:
            try:
                return fn(*args)
            except (BlockingIOError, InterruptedError):
                pass
            wait(sock, write, saved)
    finally:
        _orig_socket.settimeout(sock, saved)


def connect(sock, address):
    """A non-blocking connect, waiting writable; the host name (if any) is
    resolved on the resolver threads, not inside the C connect."""
    address = resolve_for_connect(sock, address)
    saved = _orig_socket.gettimeout(sock)
    _orig_socket.settimeout(sock, 0.0)
    try:
        err = _orig_socket.connect_ex(sock, address)
        if err in _CONNECTING:
            wait(sock, True, saved)
            err = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_ERROR)
        if err and err != _errno.EISCONN:
            raise OSError(err, _os.strerror(err))
    finally:
        _orig_socket.settimeout(sock, saved)


class CooperativeSocket(_socket.socket):
    """A socket whose blocking calls yield to other requests."""

    __slots__ = ()

    def _coop(self, write, fn, *args):
        if not cooperative(self):
            return fn(*args)
        return call(self, write, fn, *args)

    def recv(self, *a):
        return self._coop(False, super().recv, *a)

    def recv_into(self, *a):
        return self._coop(False, super().recv_into, *a)

    def recvfrom(self, *a):
        return self._coop(False, super().recvfrom, *a)

    def recvfrom_into(self, *a):
        return self._coop(False, super().recvfrom_into, *a)

    def recvmsg(self, *a):
        return self._coop(False, super().recvmsg, *a)

    def send(self, *a):
        return self._coop(True, super().send, *a)

    def sendto(self, *a):
        return self._coop(True, super().sendto, *a)

    def sendmsg(self, *a):
        return self._coop(True, super().sendmsg, *a)

    def sendall(self, data, flags=0):
        if not cooperative(self):
            return super().sendall(data, flags)
        with memoryview(data) as view, view.cast("B") as b:
            while b:
                b = b[self.send(b, flags):]

    def sendfile(self, file, offset=0, count=None):
        if not cooperative(self):
            return super().sendfile(file, offset, count)
        return self._sendfile_use_send(file, offset, count)

    def accept(self):
        if not cooperative(self):
            return super().accept()
        fd, addr = call(self, False, self._accept)
        sock = type(self)(self.family, self.type, self.proto, fileno=fd)
        if _socket.getdefaulttimeout() is None and self.gettimeout():
            sock.setblocking(True)
        return sock, addr

    def connect(self, address):
        if not cooperative(self):
            return super().connect(address)
        connect(self, address)

    def connect_ex(self, address):
        if not cooperative(self):
            return super().connect_ex(address)
        try:
            connect(self, address)
        except OSError as e:
            if e.errno is None:
                raise
            return e.errno
        return 0
