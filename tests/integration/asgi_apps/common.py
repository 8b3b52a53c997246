"""Shared by the framework apps of tests/integration/asgi_apps: a log of
events (lifespan, background tasks, a stream's end) the tests read back over
HTTP, and the file the FileResponse rows serve (written by the test before
the servers start: $ASGI_TEST_BLOB)."""
import os
import threading

BLOB = os.environ.get("ASGI_TEST_BLOB", "/nonexistent/asgi-test-blob.bin")


class Events:
    def __init__(self):
        self.lock = threading.Lock()
        self.items = []

    def add(self, what):
        with self.lock:
            self.items.append(what)

    def snapshot(self):
        with self.lock:
            return list(self.items)
