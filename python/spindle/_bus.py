"""The bus from Python: topics published to and subscribed from, the ones
``--bus memory`` or ``--bus redis://...`` configures for C handlers too.
WSGI code calls ``publish`` / ``subscribe`` (the greenlet waits while the
call runs on a coroutine); ASGI code awaits ``apublish`` / ``asubscribe``.
A subscription made in a request is closed when that request ends."""

import errno as _errno
import typing

from . import _spindle

BusError = _spindle.BusError


class Message(typing.NamedTuple):
    """One message: its id ("MS-SEQ", growing within a topic), its topic and
    its data (bytes; a str was published as UTF-8)."""
    id: str
    topic: str
    data: bytes


def _message(t):
    return None if t is None else Message(*t)


class _Base:
    __slots__ = ("_h",)

    def __init__(self, handle):
        self._h = handle

    @property
    def topic(self):
        return self._h.topic

    @property
    def last_id(self):
        """The id of the last message received (or where it started from):
        subscribe again with ``since=last_id`` to miss nothing retained."""
        return self._h.last_id

    @property
    def closed(self):
        return self._h.closed

    def close(self):
        """Ends the subscription (a recv waiting on it raises BusError
        EBADF). Closing twice is fine."""
        self._h.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<%s %r last_id=%s%s>" % (type(self).__name__, self.topic, self.last_id,
                                         " closed" if self.closed else "")


def _ends_iteration(e):
    return e.errno in (_errno.ESHUTDOWN, _errno.EBADF)


class Subscription(_Base):
    """A topic's messages in order, for WSGI code (and spindle.spawn'd
    greenlets). ``recv(timeout=None)`` waits for the next one (None when
    the timeout in seconds ran out); ``for msg in sub`` loops until the
    subscription is closed or the server stops."""
    __slots__ = ()

    def recv(self, timeout=None):
        return _message(self._h.recv(timeout))

    def __iter__(self):
        while True:
            try:
                yield Message(*self._h.recv(None))
            except BusError as e:
                if _ends_iteration(e):
                    return
                raise


class AsyncSubscription(_Base):
    """The same for ASGI code: ``await sub.recv(timeout)``, ``async for msg
    in sub``, ``async with`` (or ``with``) to close it."""
    __slots__ = ()

    async def recv(self, timeout=None):
        return _message(await self._h.arecv(timeout))

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        self.close()

    def __aiter__(self):
        return self

    async def __anext__(self):
        try:
            return Message(*await self._h.arecv(None))
        except BusError as e:
            if _ends_iteration(e):
                raise StopAsyncIteration from None
            raise


def publish(topic, data):
    """Publishes data (bytes, or str sent as UTF-8) on topic and returns its
    id once the bus holds it; BusError (errno: ECONNREFUSED/ECONNRESET/
    ETIMEDOUT Redis unreachable, EMSGSIZE, EINVAL, ENXIO no --bus) when it
    was not published. From a WSGI request or a spindle.spawn'd greenlet."""
    return _spindle._bus_publish(topic, data)


def subscribe(topic, since=None):
    """A Subscription to topic: messages published from now on (since=None),
    everything retained (since="0"), or those after an id (since=last_id).
    Made in a request, it is closed when that request ends."""
    return Subscription(_spindle._bus_subscribe(topic, since))


async def apublish(topic, data):
    """publish for ASGI code: ``id = await spindle.apublish(topic, data)``."""
    return await _spindle._bus_apublish(topic, data)


async def asubscribe(topic, since=None):
    """subscribe for ASGI code: ``sub = await spindle.asubscribe(topic)``.
    Made in a request, it is closed when that request ends."""
    from ._asgi import current_cycle  # not at import: WSGI apps need no asyncio
    cycle = current_cycle.get(None)
    return AsyncSubscription(await _spindle._bus_asubscribe(topic, since, cycle))
