"""uvicorn running Falcon's ASGI app (apps/falcon_app.py) with async def responders.

One thread, one event loop: /async-sleep awaits, /sync-sleep blocks the loop.
--loop and --http choose uvicorn's event loop and parser, as for uvicorn_app.py.
"""

import uvicorn_app
from apps import falcon_app
from iolab.contract import parse_args


def main():
    uvicorn_app.serve(falcon_app.asgi_application, parse_args(__doc__.splitlines()[0], uvicorn_app.add_arguments))


if __name__ == "__main__":
    main()
