"""A WSGI app whose /block handler stalls the worker's loop (an unpatched
time.sleep) and /spin busy-loops, for the watchdog's traceback dump (test_wsgi_stall.py)."""
import os
import time


def block_the_loop():
    time.sleep(8)  # not patched: holds the whole worker


def spin_the_loop():
    end = time.monotonic() + 8
    while time.monotonic() < end:  # pure Python, never waiting
        pass


def application(environ, start_response):
    if environ["PATH_INFO"] == "/block":
        block_the_loop()
    elif environ["PATH_INFO"] == "/spin":
        spin_the_loop()
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"pid %d" % os.getpid()]
