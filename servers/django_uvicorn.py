"""uvicorn running Django's ASGI handler (apps/django_app.py) with async def views.

One thread, one event loop: /async-sleep awaits, /sync-sleep blocks the loop.
--loop and --http choose uvicorn's event loop and parser, as for uvicorn_app.py.
"""

import os

os.environ["IOLAB_DJANGO_INTERFACE"] = "asgi"  # read by apps/django_app.py when it is imported, just below

import uvicorn_app  # noqa: E402
from apps import django_app  # noqa: E402
from iolab.contract import parse_args  # noqa: E402


def main():
    uvicorn_app.serve(django_app.application, parse_args(__doc__.splitlines()[0], uvicorn_app.add_arguments))


if __name__ == "__main__":
    main()
