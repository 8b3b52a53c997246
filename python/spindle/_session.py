"""spindle.session(environ): the visitor's session as a mutable mapping of
str to str, kept by the store --sessions names (memory, SQLite, Redis), with
the same signed cookie as C handlers get. Each change is written to the
store on the request's coroutine; the greenlet waits meanwhile."""

from collections.abc import MutableMapping

from . import _spindle

_KEY = "spindle.session"


class Session(MutableMapping):
    """The session of one request; valid until the application returns.

    ``s["user"] = "ann"`` stores at once; ``.id`` is the session id;
    ``.clear()`` empties it and gives the visitor a new id (log-out);
    ``.regenerate()`` keeps the data under a new id (call it at log-in);
    ``.ttl`` is the seconds left, settable (1 s .. 100 years). clear,
    regenerate and setting ttl reissue the cookie, so they must come before
    the body is first written (RuntimeError after)."""

    __slots__ = ("_h",)

    def __init__(self, handle):
        self._h = handle

    def __getitem__(self, key):
        value = self._h.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key, value):
        self._h.set(key, value)

    def __delitem__(self, key):
        if self._h.get(key) is None:
            raise KeyError(key)
        self._h.delete(key)

    def __iter__(self):
        return iter(self._h.keys())

    def __len__(self):
        return len(self._h.keys())

    def __contains__(self, key):
        return isinstance(key, str) and self._h.get(key) is not None

    def clear(self):
        self._h.clear()

    def regenerate(self):
        self._h.regenerate()

    @property
    def id(self):
        return self._h.id()

    @property
    def expiry(self):
        """When the session expires: unix seconds."""
        return self._h.expiry()

    @property
    def ttl(self):
        import time
        return max(0, self._h.expiry() - int(time.time()))

    @ttl.setter
    def ttl(self, seconds):
        self._h.set_ttl(int(seconds))

    def __repr__(self):
        return "<spindle.Session %s %r>" % (self.id, dict(self))


def session(environ):
    """The visitor's session for this request (the same object on every
    call in the request). Call it before the body is first written: its
    Set-Cookie goes in the response head. Needs --sessions STORE;
    RuntimeError otherwise, saying what to add."""
    s = environ.get(_KEY)
    if s is None:
        s = Session(_spindle._session_open(environ))
        environ[_KEY] = s
    return s
