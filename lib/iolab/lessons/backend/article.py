"""The C10k write-up's figures (wrk -t4 -c1000 -d60s, one small cloud VM), for the lesson's tables beside its own runs."""

CONNECTIONS = 1000  # wrk -c1000
DURATION_S = 60  # wrk -d60s

# Test 1: hello world.
HELLO = {"tornado_backend": 452.0, "gunicorn_flask": 71.0, "gevent_flask": 458.0}
HELLO_GUNICORN_WORKERS = 4
# Test 2: the handler sends a task and waits for its result; test 3: it sends and answers at once.
WAITS = {"tornado_backend": 6.92, "gevent_flask": 6.21, "gunicorn_flask": 7.42}
FORGETS = {"tornado_backend": 243.5, "gevent_flask": 252.8}
BLOCKING_GUNICORN_WORKERS = 3
FORGET_TIMEOUTS = 11_849  # wrk's timeouts in Tornado's fire-and-forget run, beside 14,627 completed
