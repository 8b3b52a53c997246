"""A one-file Django project (python3-django, unmodified): settings in code,
views, a form with CSRF, templates."""
from django.conf import settings

TEMPLATES = {
    "base.html": "<html><title>{% block title %}x{% endblock %}</title>"
                 "<body>{% block body %}{% endblock %}</body></html>",
    "hello.html": "{% extends 'base.html' %}{% block title %}Hi {{ name }}{% endblock %}"
                  "{% block body %}<h1>Hello, {{ name|title }}!</h1><ul>"
                  "{% for i in items %}<li>{{ forloop.counter }}: {{ i }}</li>{% endfor %}"
                  "</ul>{{ unsafe }}{% endblock %}",
    "form.html": "{% extends 'base.html' %}{% block body %}<form method='post'>"
                 "{% csrf_token %}{{ form.as_p }}<input type='submit'></form>{% endblock %}",
    "thanks.html": "{% extends 'base.html' %}{% block body %}Thanks {{ name }}, "
                   "{{ age|add:1 }} next year{% endblock %}",
}

settings.configure(
    DEBUG=False,
    SECRET_KEY="spindle-test-secret-key-not-for-production-0123456789",
    ALLOWED_HOSTS=["127.0.0.1", "localhost"],
    ROOT_URLCONF=__name__,
    MIDDLEWARE=[
        "django.middleware.common.CommonMiddleware",
        "django.middleware.csrf.CsrfViewMiddleware",
    ],
    INSTALLED_APPS=[],
    TEMPLATES=[{
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "OPTIONS": {
            "loaders": [("django.template.loaders.locmem.Loader", TEMPLATES)],
            "context_processors": ["django.template.context_processors.csrf"],
        },
    }],
    USE_TZ=True,
)

import django  # noqa: E402

django.setup()

from django import forms  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.http import HttpResponse, JsonResponse  # noqa: E402
from django.shortcuts import render  # noqa: E402
from django.urls import path  # noqa: E402
from django.views.decorators.csrf import csrf_exempt  # noqa: E402


class PersonForm(forms.Form):
    name = forms.CharField(max_length=20)
    age = forms.IntegerField(min_value=0)


def index(request):
    return HttpResponse("Hello from Django", content_type="text/plain")


def hello(request, name):
    return render(request, "hello.html", {"name": name, "items": ["a", "b", "c"],
                                          "unsafe": "<script>x</script>"})


def person(request):
    if request.method == "POST":
        form = PersonForm(request.POST)
        if form.is_valid():
            return render(request, "thanks.html", form.cleaned_data)
    else:
        form = PersonForm()
    return render(request, "form.html", {"form": form})


@csrf_exempt
def exempt(request):
    return JsonResponse({"method": request.method, "post": dict(request.POST.lists()),
                         "get": dict(request.GET.lists()), "body_len": len(request.body),
                         "path": request.path, "ctype": request.content_type})


def meta(request):
    return JsonResponse({k: request.META.get(k) for k in (
        "REQUEST_METHOD", "PATH_INFO", "SCRIPT_NAME", "QUERY_STRING", "REMOTE_ADDR",
        "SERVER_PROTOCOL", "HTTP_X_CUSTOM")})


urlpatterns = [
    path("", index),
    path("hello/<str:name>/", hello),
    path("person/", person),
    path("exempt/", exempt),
    path("meta/", meta),
]

application = get_wsgi_application()
