"""gunicorn's sync workers running Falcon's WSGI app (apps/falcon_app.py): gunicorn_app.py with another app.

Each sync worker handles one request at a time and closes every connection,
so the server serves --workers requests at once.
"""

import gunicorn_app
from iolab.contract import parse_args


def main():
    gunicorn_app.serve(parse_args(__doc__, gunicorn_app.add_arguments), "apps.falcon_app:application")


if __name__ == "__main__":
    main()
