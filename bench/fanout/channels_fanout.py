"""channels_fanout.py — bench/run's fanout Django Channels peer: /ws joins group
"fanout" (channels_redis at FANOUT_REDIS; FANOUT_LAYER=pubsub for the pub/sub
layer), POST /publish is a Django view calling group_send. On uvicorn."""
import os

import django
from django.conf import settings

LAYER = {"pubsub": "channels_redis.pubsub.RedisPubSubChannelLayer"}.get(
    os.environ.get("FANOUT_LAYER", ""), "channels_redis.core.RedisChannelLayer")
settings.configure(
    DEBUG=False, SECRET_KEY="bench-only", ALLOWED_HOSTS=["*"], ROOT_URLCONF=__name__, MIDDLEWARE=[],
    INSTALLED_APPS=["channels"],
    CHANNEL_LAYERS={"default": {"BACKEND": LAYER, "CONFIG": {"hosts": [os.environ["FANOUT_REDIS"]]}}})
django.setup()

from channels.generic.websocket import AsyncWebsocketConsumer  # noqa: E402
from channels.layers import get_channel_layer  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402
from django.http import HttpResponse  # noqa: E402
from django.urls import path  # noqa: E402


async def publish(request):
    await get_channel_layer().group_send("fanout", {"type": "fanout.message", "text": request.body.decode()})
    r = HttpResponse(b"ok", content_type="text/plain")
    r["Content-Length"] = "2"
    return r


urlpatterns = [path("publish", publish)]


class Subscriber(AsyncWebsocketConsumer):
    async def connect(self):
        await self.channel_layer.group_add("fanout", self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        await self.channel_layer.group_discard("fanout", self.channel_name)

    async def fanout_message(self, event):
        await self.send(text_data=event["text"])


application = ProtocolTypeRouter({
    "http": get_asgi_application(),
    "websocket": URLRouter([path("ws", Subscriber.as_asgi())]),
})
