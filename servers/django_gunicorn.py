"""gunicorn's sync workers running Django (apps/django_app.py): gunicorn_app.py with another app.

Each sync worker handles one request at a time and closes every connection,
so the server serves --workers requests at once. apps/django_app.py serves its
def views, the WSGI ones, unless told otherwise.
"""

import gunicorn_app
from iolab.contract import parse_args


def main():
    gunicorn_app.serve(parse_args(__doc__, gunicorn_app.add_arguments), "apps.django_app:application")


if __name__ == "__main__":
    main()
