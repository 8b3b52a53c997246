"""Cooperative ssl for spindle.patch(): SSLContext.wrap_socket builds a
CooperativeSSLSocket, whose handshake, reads and writes run with the fd
non-blocking inside a request and wait on the loop on SSLWantRead /
SSLWantWrite (the TLS layer may need to write to read, and the reverse)."""

import ssl as _ssl

from . import socket as _gs

_orig_class = _ssl.SSLContext.sslsocket_class


def _tls(sock, fn, *args):
    """fn(*args) with the fd non-blocking, waiting as the TLS layer asks."""
    saved = _gs._orig_socket.gettimeout(sock)
    _gs._orig_socket.settimeout(sock, 0.0)
    try:
        while True:
            try:
                return fn(*args)
            except _ssl.SSLWantReadError:
                _gs.wait(sock, False, saved)
            except _ssl.SSLWantWriteError:
                _gs.wait(sock, True, saved)
            except (BlockingIOError, InterruptedError):
                _gs.wait(sock, False, saved)  # never seen on a TLS fd; be safe
    finally:
        _gs._orig_socket.settimeout(sock, saved)


class CooperativeSSLSocket(_orig_class):
    """An SSLSocket whose blocking calls yield to other requests."""

    def do_handshake(self, block=False):
        if not _gs.cooperative(self):
            return super().do_handshake(block)
        self._check_connected()
        return _tls(self, self._sslobj.do_handshake)

    def read(self, len=1024, buffer=None):
        if self._sslobj is None or not _gs.cooperative(self):
            return super().read(len, buffer)
        return _tls(self, super().read, len, buffer)

    def write(self, data):
        if self._sslobj is None or not _gs.cooperative(self):
            return super().write(data)
        return _tls(self, super().write, data)

    def send(self, data, flags=0):
        if self._sslobj is None or flags or not _gs.cooperative(self):
            return super().send(data, flags)
        return _tls(self, self._sslobj.write, data)

    def connect(self, addr):
        self._green_connect(addr)

    def connect_ex(self, addr):
        try:
            self._green_connect(addr)
        except OSError as e:
            if e.errno is None:
                raise
            return e.errno
        return 0

    def _green_connect(self, addr):
        if not _gs.cooperative(self):
            return super().connect(addr)
        # As SSLSocket._real_connect, with the TCP connect on the loop.
        if self.server_side:
            raise ValueError("can't connect in server-side mode")
        if self._connected or self._sslobj is not None:
            raise ValueError("attempt to connect already-connected SSLSocket!")
        self._sslobj = self.context._wrap_socket(self, False, self.server_hostname,
                                                 owner=self, session=self._session)
        try:
            _gs.connect(self, addr)
            self._connected = True
            if self.do_handshake_on_connect:
                self.do_handshake()
        except (OSError, ValueError):
            self._sslobj = None
            raise


def install():
    _ssl.SSLContext.sslsocket_class = CooperativeSSLSocket
