"""A Django 3.2 project in one module (settings configured here, async
views, URLconf), served through django.core.asgi's ASGI application under
uvicorn and spindle by tests/integration/test_asgi_frameworks.py. Django 3.2
speaks only ASGI HTTP: no lifespan (the servers' --lifespan auto must cope)
and no WebSocket (that would be Channels)."""
import asyncio
import hashlib
import json

import django
from django.conf import settings

settings.configure(
    DEBUG=False,
    SECRET_KEY="spindle-asgi-test-only",
    ROOT_URLCONF=__name__,
    ALLOWED_HOSTS=["127.0.0.1", "localhost"],
    MIDDLEWARE=["django.middleware.common.CommonMiddleware"],
    INSTALLED_APPS=[],
    USE_TZ=True,
    LOGGING_CONFIG=None,
)
django.setup()

from django.core.asgi import get_asgi_application  # noqa: E402
from django.http import (FileResponse, Http404, HttpResponse, JsonResponse,  # noqa: E402
                         StreamingHttpResponse)
from django.urls import path  # noqa: E402

import common  # noqa: E402


async def home(request):
    return HttpResponse("Hello from Django", content_type="text/plain")


async def item(request, item_id):
    return JsonResponse({"id": item_id, "q": request.GET.getlist("q"), "path": request.path,
                         "full": request.get_full_path(), "host": request.get_host(),
                         "secure": request.is_secure(), "remote": request.META.get("REMOTE_ADDR"),
                         "x_test": request.headers.get("X-Test")})


async def echo(request):
    if request.method != "POST":
        return HttpResponse("POST only", status=405)
    try:
        data = json.loads(request.body)
    except ValueError:
        return JsonResponse({"error": "bad json"}, status=400)
    return JsonResponse({"echo": data})


async def upload(request):
    body = request.body
    return JsonResponse({"size": len(body), "sha": hashlib.sha256(body).hexdigest(),
                         "form": {k: request.POST.getlist(k) for k in request.POST}})


def _lines(n):
    for i in range(n):
        yield "row %d\n" % i


async def stream(request):
    return StreamingHttpResponse(_lines(int(request.GET.get("n", "10"))), content_type="text/plain")


async def sse(request):
    events = ("event: n\ndata: %d\n\n" % i for i in range(4))
    r = StreamingHttpResponse(events, content_type="text/event-stream")
    r["Cache-Control"] = "no-cache"
    return r


async def file(request):
    return FileResponse(open(common.BLOB, "rb"), as_attachment=True, filename="blob.bin")


async def cookies(request):
    r = HttpResponse("cookies", status=201)
    r.set_cookie("a", "1")
    r.set_cookie("b", "2", httponly=True)
    r["X-Custom"] = "custom"
    return r


async def missing(request):
    raise Http404("nothing here")


async def slow(request):
    await asyncio.sleep(0.01)
    return HttpResponse("slept")


async def boom(request):
    raise RuntimeError("boom on purpose")


urlpatterns = [
    path("", home),
    path("items/<int:item_id>/", item),
    path("echo/", echo),
    path("upload/", upload),
    path("stream/", stream),
    path("sse/", sse),
    path("file/", file),
    path("cookies/", cookies),
    path("missing/", missing),
    path("slow/", slow),
    path("boom/", boom),
]

application = get_asgi_application()
