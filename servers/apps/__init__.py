"""The applications the servers run: WSGI and ASGI apps, a Flask, a Django and a Falcon app, and lesson 10's tasks.

Nothing here listens on a port. gunicorn, uvicorn, gevent and Celery import
these modules (`apps.wsgi_app:application`, `-A apps.backend_tasks`), and the
lab's wrappers and servers in the folder above start them under the contract.
"""
