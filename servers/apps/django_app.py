"""The lab's routes as a Django project in one file: settings, views and URLs.

Django runs the same project two ways. Under WSGI (django_gunicorn.py) each
request is a plain function call in a worker that serves one request at a
time, so there is no way to wait without blocking: no /async-sleep. Under
ASGI (django_uvicorn.py) the views are `async def`, run by an event loop, and
/async-sleep awaits. Which set of views is served is chosen by the
environment variable below, before Django reads its settings.
"""

import asyncio
import os
import time

from django.conf import settings
from django.core.asgi import get_asgi_application
from django.core.exceptions import BadRequest
from django.core.wsgi import get_wsgi_application
from django.http import HttpResponse
from django.urls import path

from iolab.contract import HELLO_BODY, BadParameter, burn_cpu, parse_ms

INTERFACE_ENV = "IOLAB_DJANGO_INTERFACE"  # "wsgi" or "asgi"

settings.configure(
    DEBUG=False,
    SECRET_KEY="iolab: no sessions, no forms, nothing signed",
    ROOT_URLCONF=__name__,
    ALLOWED_HOSTS=["*"],  # like every lab server, it listens on loopback only and answers any Host
    INSTALLED_APPS=[],
    MIDDLEWARE=[],  # no sessions, CSRF or common middleware: the least a Django request costs
    DATABASES={},
)


def text(body, status=200):
    response = HttpResponse(body, status=status, content_type="text/plain")
    # Django leaves Content-Length to a middleware; without it the server would close or chunk.
    response["Content-Length"] = str(len(response.content))
    return response


def query_ms(request):
    """?ms= checked; a bad value becomes Django's BadRequest, which handler400 turns into a 400."""
    try:
        return parse_ms(request.GET.get("ms"))  # QueryDict.get: the last ?ms= wins
    except BadParameter as error:
        raise BadRequest(str(error)) from None


def bad_request(request, exception):
    return text(f"400 {exception}\n", 400)


def not_found(request, exception):
    return text(f"404 no route for {request.path}\n", 404)


# --- WSGI: def views, one request at a time per worker ---------------------------------------------

def hello(request):
    """Handler C: answers at once."""
    return text(HELLO_BODY)


def sync_sleep(request):
    """Handler A: sleeps, holding the worker: a sync worker has no other thread."""
    ms = query_ms(request)
    time.sleep(ms / 1000)
    return text(f"slept {ms} ms in one worker\n")


def cpu(request):
    ms = query_ms(request)
    burn_cpu(ms)
    return text(f"burned {ms} ms of CPU\n")


# --- ASGI: async def views on one event loop -------------------------------------------------------

async def async_hello(request):
    return text(HELLO_BODY)


async def async_sync_sleep(request):
    """Handler A: time.sleep blocks the loop's only thread, so every connection waits."""
    ms = query_ms(request)
    time.sleep(ms / 1000)
    return text(f"slept {ms} ms blocking the loop\n")


async def async_sleep(request):
    """Handler B: awaiting asyncio.sleep hands the thread back to the loop while we wait."""
    ms = query_ms(request)
    await asyncio.sleep(ms / 1000)
    return text(f"waited {ms} ms without blocking\n")


async def async_cpu(request):
    ms = query_ms(request)
    burn_cpu(ms)
    return text(f"burned {ms} ms of CPU\n")


ASGI = os.environ.get(INTERFACE_ENV) == "asgi"
if ASGI:
    urlpatterns = [path("", async_hello), path("sync-sleep", async_sync_sleep), path("async-sleep", async_sleep),
                   path("cpu", async_cpu)]
else:
    urlpatterns = [path("", hello), path("sync-sleep", sync_sleep), path("cpu", cpu)]
handler400 = bad_request
handler404 = not_found

# What the server calls for every request; building it runs django.setup().
application = get_asgi_application() if ASGI else get_wsgi_application()
