"""Pre-forking for the single-process WSGI servers (gevent, eventlet):
fork(WORKERS) forks WORKERS-1 children after the listening socket exists,
so all of them accept from it, as gunicorn's workers do; the parent is one
of the workers and, on SIGTERM, stops the children it forked."""
import os
import signal
import sys


def fork(workers):
    kids = []
    for _ in range(workers - 1):
        pid = os.fork()
        if pid == 0:
            return
        kids.append(pid)

    def stop(signum, frame):
        for k in kids:
            try:
                os.kill(k, signal.SIGTERM)
            except ProcessLookupError:
                pass
        sys.exit(0)

    if kids:
        signal.signal(signal.SIGTERM, stop)
