"""For green_local_app: a module imported after spindle.patch() that takes
threading.local by name, as libraries do (`from threading import local`)."""
import _thread
from threading import local

BY_NAME = local()
BY_THREAD_MODULE = _thread._local()
