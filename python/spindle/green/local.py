"""Greenlet-local threading.local for spindle.patch(). A worker's requests
share its one OS thread (each on a greenlet), so a per-thread local would
let a request that waits read what a concurrent one stored. Here each
greenlet (of any thread) has its own attribute dict, dropped when the
greenlet dies; the semantics are those of _threading_local.local."""

import _thread
import threading as _threading
import weakref as _weakref

from greenlet import getcurrent as _getcurrent

_MISSING = object()


class _Impl:
    """Per-greenlet dicts of one local: id(greenlet) -> (weakref, dict).
    Only a greenlet itself adds its entry and the GIL makes each dict
    operation atomic, so no lock is needed (a lock held across a greenlet
    switch would be shared by every greenlet of the thread)."""

    __slots__ = ("dicts", "args", "__weakref__")

    def __init__(self, args):
        self.dicts = {}
        self.args = args

    def create(self, g):
        key = id(g)
        me = _weakref.ref(self)

        def dead(_ref, key=key):
            impl = me()
            if impl is not None:
                impl.dicts.pop(key, None)

        d = {}
        self.dicts[key] = (_weakref.ref(g, dead), d)
        return d


def _own_dict(self):
    """The current greenlet's dict, made (and __init__ run again with the
    arguments of the first call) on its first touch of the object."""
    impl = object.__getattribute__(self, "_local__impl")
    g = _getcurrent()
    entry = impl.dicts.get(id(g))
    if entry is not None and entry[0]() is g:
        return entry[1]
    d = impl.create(g)
    args, kw = impl.args
    type(self).__init__(self, *args, **kw)
    return d


def _type_attr(tp, name):
    for k in tp.__mro__:
        if name in k.__dict__:
            return k.__dict__[name]
    return _MISSING


def _is_data(attr):
    t = type(attr)
    return hasattr(t, "__set__") or hasattr(t, "__delete__")


def _read_only(self):
    return AttributeError("%r object attribute '__dict__' is read-only"
                          % type(self).__name__)


class local:
    """threading.local with one attribute dict per greenlet. __slots__ of a
    subclass hold values shared by all greenlets, as with threads."""

    __slots__ = ("_local__impl", "__weakref__")

    def __new__(cls, /, *args, **kw):
        if (args or kw) and cls.__init__ is object.__init__:
            raise TypeError("Initialization arguments are not supported")
        self = object.__new__(cls)
        impl = _Impl((args, kw))
        object.__setattr__(self, "_local__impl", impl)
        # The caller's __init__ runs next, through type.__call__: make the
        # dict now so that _own_dict does not run it a second time.
        impl.create(_getcurrent())
        return self

    def __getattribute__(self, name):
        d = _own_dict(self)
        if name == "__dict__":
            return d
        tp = type(self)
        attr = _type_attr(tp, name)
        if attr is not _MISSING and _is_data(attr):
            return type(attr).__get__(attr, self, tp)
        if name in d:
            return d[name]
        if attr is not _MISSING:
            get = getattr(type(attr), "__get__", None)
            return attr if get is None else get(attr, self, tp)
        raise AttributeError("%r object has no attribute %r" % (tp.__name__, name))

    def __setattr__(self, name, value):
        if name == "__dict__":
            raise _read_only(self)
        d = _own_dict(self)
        attr = _type_attr(type(self), name)
        setter = getattr(type(attr), "__set__", None) if attr is not _MISSING else None
        if setter is not None:
            setter(attr, self, value)
        elif attr is not _MISSING and _is_data(attr):
            raise AttributeError("attribute %r of %r object is read-only"
                                 % (name, type(self).__name__))
        else:
            d[name] = value

    def __delattr__(self, name):
        if name == "__dict__":
            raise _read_only(self)
        d = _own_dict(self)
        attr = _type_attr(type(self), name)
        deleter = getattr(type(attr), "__delete__", None) if attr is not _MISSING else None
        if deleter is not None:
            deleter(attr, self)
        elif name in d:
            del d[name]
        else:
            raise AttributeError("%r object has no attribute %r"
                                 % (type(self).__name__, name))


def install():
    """threading.local (and _thread._local, _threading_local.local) made
    from now on are greenlet-local; so are those of modules imported later
    that take the name from threading."""
    _threading.local = local
    _thread._local = local
    import _threading_local
    _threading_local.local = local
