"""Which event loop the servers a test starts run on: io_uring by default
(--io-backend auto) where this process may create one, epoll where it may
not or where make test's epoll pass sets SPINDLE_IO_BACKEND=epoll."""
import ctypes
import os


def uring_available():
    """Whether this process may create an io_uring (io_uring_setup, 425)."""
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)
    fd = libc.syscall(425, 4, params)
    if fd < 0:
        return False
    os.close(fd)
    return True


def expected_backend():
    """The backend's name as the banner and the workers' log lines give it,
    for a server started without --io-backend."""
    asked = os.environ.get("SPINDLE_IO_BACKEND", "auto")
    return "io_uring" if asked != "epoll" and uring_available() else "epoll"
