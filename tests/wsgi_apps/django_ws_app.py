"""A Django view (python3-django, unmodified) holding a WebSocket through
spindle.websocket: the upgrade does not go through Django's response; the
view returns an empty HttpResponse, which the binding ignores once the
socket is taken over."""
from django.conf import settings

settings.configure(
    DEBUG=False,
    SECRET_KEY="spindle-test-secret-key-not-for-production-0123456789",
    ALLOWED_HOSTS=["127.0.0.1", "localhost", "x"],  # the tests' raw clients send Host: x
    ROOT_URLCONF=__name__,
    MIDDLEWARE=["django.middleware.common.CommonMiddleware"],
    INSTALLED_APPS=[],
    USE_TZ=True,
)

import django  # noqa: E402

django.setup()

from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.http import HttpResponse  # noqa: E402
from django.urls import path  # noqa: E402

import spindle  # noqa: E402


def ws_view(request, name):
    ws = spindle.websocket(request.environ, subprotocols=("chat",))
    ws.send("hello %s over %s" % (name, ws.subprotocol))
    for msg in ws:
        if msg == "bye":
            ws.close(4000, "see you")
            break
        ws.send("%s: %s" % (name, msg))
    return HttpResponse()


def plain(request):
    return HttpResponse("plain Django view", content_type="text/plain")


urlpatterns = [path("ws/<str:name>/", ws_view), path("plain/", plain)]

application = get_wsgi_application()
