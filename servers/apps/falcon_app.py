"""The lab's routes as a Falcon app, twice: WSGI with def responders, ASGI with async def ones.

falcon_gunicorn.py serves the WSGI app under gunicorn's sync workers, where
nothing can wait without blocking (no /async-sleep); falcon_uvicorn.py serves
the ASGI app under uvicorn, one event loop, where /async-sleep awaits.
"""

import asyncio
import time

import falcon
import falcon.asgi

from iolab.contract import HELLO_BODY, BadParameter, burn_cpu, parse_ms


def query_ms(req):
    return parse_ms((req.get_param_as_list("ms") or [None])[-1])  # the last ?ms= wins


def answer(resp, body, status=falcon.HTTP_200):
    resp.status, resp.content_type, resp.text = status, falcon.MEDIA_TEXT, body  # Falcon adds Content-Length


# --- WSGI: def responders, one request at a time per sync worker ----------------------------------

class Hello:
    def on_get(self, req, resp):
        answer(resp, HELLO_BODY)


class SyncSleep:
    def on_get(self, req, resp):
        ms = query_ms(req)
        time.sleep(ms / 1000)
        answer(resp, f"slept {ms} ms in one worker\n")


class Cpu:
    def on_get(self, req, resp):
        ms = query_ms(req)
        burn_cpu(ms)
        answer(resp, f"burned {ms} ms of CPU\n")


def bad_parameter(req, resp, error, params):
    answer(resp, f"400 {error}\n", falcon.HTTP_400)


def not_found(req, resp, error, params):
    answer(resp, f"404 no route for {req.path}\n", falcon.HTTP_404)


application = falcon.App()
for route, resource in [("/", Hello()), ("/sync-sleep", SyncSleep()), ("/cpu", Cpu())]:
    application.add_route(route, resource)
application.add_error_handler(BadParameter, bad_parameter)
application.add_error_handler(falcon.HTTPNotFound, not_found)


# --- ASGI: async def responders on one event loop -------------------------------------------------

class AsyncHello:
    async def on_get(self, req, resp):
        answer(resp, HELLO_BODY)


class AsyncSyncSleep:
    async def on_get(self, req, resp):
        """Handler A: time.sleep blocks the loop's only thread, so every connection waits."""
        ms = query_ms(req)
        time.sleep(ms / 1000)
        answer(resp, f"slept {ms} ms blocking the loop\n")


class AsyncSleep:
    async def on_get(self, req, resp):
        """Handler B: awaiting asyncio.sleep hands the thread back to the loop while we wait."""
        ms = query_ms(req)
        await asyncio.sleep(ms / 1000)
        answer(resp, f"waited {ms} ms without blocking\n")


class AsyncCpu:
    async def on_get(self, req, resp):
        ms = query_ms(req)
        burn_cpu(ms)
        answer(resp, f"burned {ms} ms of CPU\n")


async def async_bad_parameter(req, resp, error, params):
    bad_parameter(req, resp, error, params)


async def async_not_found(req, resp, error, params):
    not_found(req, resp, error, params)


asgi_application = falcon.asgi.App()
for route, resource in [("/", AsyncHello()), ("/sync-sleep", AsyncSyncSleep()), ("/async-sleep", AsyncSleep()),
                        ("/cpu", AsyncCpu())]:
    asgi_application.add_route(route, resource)
asgi_application.add_error_handler(BadParameter, async_bad_parameter)
asgi_application.add_error_handler(falcon.HTTPNotFound, async_not_found)
