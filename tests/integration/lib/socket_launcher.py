#!/usr/bin/env python3
"""A stand-in for systemd socket activation, for the operations tests.

    socket_launcher.py HOST:PORT PROGRAM [ARG]...

Binds and listens on HOST:PORT (TCP), puts that socket on fd 3, sets
LISTEN_PID to its own pid (exec keeps the pid, so it is the program's),
LISTEN_FDS=1 and LISTEN_FDNAMES=http, then execs PROGRAM. Exits 75 if the
address is taken (the caller picks another port), 64 on a usage error.
"""
import os
import socket
import sys


def main():
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        return 64
    host, _, port = sys.argv[1].rpartition(":")
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((host, int(port)))
    except OSError as e:
        sys.stderr.write("socket_launcher: cannot bind %s: %s (in use)\n" % (sys.argv[1], e))
        return 75
    s.listen(128)
    if s.fileno() != 3:
        os.dup2(s.fileno(), 3, inheritable=True)
        s.close()
    else:
        os.set_inheritable(3, True)
    env = dict(os.environ)
    env["LISTEN_PID"] = str(os.getpid())
    env["LISTEN_FDS"] = "1"
    env["LISTEN_FDNAMES"] = "http"
    os.execve(sys.argv[2], sys.argv[2:], env)


if __name__ == "__main__":
    sys.exit(main())
